// The declaration inside a compiled form (decl/compiled_codec.hh): the
// resources in order, each kind's spec through its codec row (one per kind, in
// Kind's order), and the want made once at compile time.
#include <type_traits>
#include <variant>

#include "decl/compiled_codec.hh"
#include "decl/kind_info.hh"
#include "decl/want.hh"

namespace mesh::decl::form {

namespace {

// A field added to the model must be written and read here too: these fail to
// compile until this file has been looked at (and the sizes updated).
static_assert(sizeof(FileSpec) == 224, "FileSpec changed: update compiled_specs.cc");
static_assert(sizeof(DirectorySpec) == 120, "DirectorySpec changed: update compiled_specs.cc");
static_assert(sizeof(LinkSpec) == 64, "LinkSpec changed: update compiled_specs.cc");
static_assert(sizeof(ArchiveSpec) == 96, "ArchiveSpec changed: update compiled_specs.cc");
static_assert(sizeof(CredentialSpec) == 200, "CredentialSpec changed: update compiled_specs.cc");
static_assert(sizeof(ProcessSpec) == 176, "ProcessSpec changed: update compiled_specs.cc");
static_assert(sizeof(ServiceSpec) == 88, "ServiceSpec changed: update compiled_specs.cc");
static_assert(sizeof(AbsentSpec) == 40, "AbsentSpec changed: update compiled_specs.cc");
static_assert(sizeof(UserSpec) == 184, "UserSpec changed: update compiled_specs.cc");
static_assert(sizeof(GroupSpec) == 48, "GroupSpec changed: update compiled_specs.cc");
static_assert(sizeof(Resource) == 400, "Resource changed: update compiled_specs.cc");
static_assert(sizeof(Declaration) == 224, "Declaration changed: update compiled_specs.cc");

// Mode, owner and group, in this order, for the kinds that have them.
template <typename S>
void writeOwnership(Writer& w, const S& s) {
  w.u(s.mode);
  w.principal(s.owner);
  w.principal(s.group);
}
template <typename S>
void readOwnership(Reader& r, S& s) {
  s.mode = r.mode();
  s.owner = r.principal();
  s.group = r.principal();
}

void writeSpec(Writer& w, const FileSpec& s) {
  w.s(s.path);
  w.optS(s.content);
  w.b(s.blob.has_value());
  if (s.blob) w.digest(*s.blob);
  w.digest(s.contentDigest);
  writeOwnership(w, s);
}
void writeSpec(Writer& w, const DirectorySpec& s) {
  w.s(s.path);
  writeOwnership(w, s);
}
void writeSpec(Writer& w, const LinkSpec& s) {
  w.s(s.path);
  w.s(s.target);
}
void writeSpec(Writer& w, const ArchiveSpec& s) {
  w.s(s.path);
  w.digest(s.bundle);
  w.u(s.maxEntries);
  w.u(s.maxBytes);
  w.b(s.replace);
  w.b(s.keepModes);
}
void writeSpec(Writer& w, const CredentialSpec& s) {
  w.s(s.path);
  w.optS(s.from);
  w.optS(s.sealed);
  writeOwnership(w, s);
}
void writeSpec(Writer& w, const ProcessSpec& s) {
  w.digest(s.bundle);
  w.u(s.unit.size());
  for (const auto& [key, value] : s.unit) {
    w.s(key);
    w.strings(value);
  }
  w.s(s.service);
  w.b(s.health.has_value());
  if (s.health) {
    w.s(s.health->exec);
    w.u(static_cast<uint64_t>(s.health->intervalMs));
    w.u(static_cast<uint64_t>(s.health->timeoutMs));
  }
}

void writeOptBool(Writer& w, const std::optional<bool>& b) {
  w.u(b ? (*b ? 2 : 1) : 0);
}
void writeSpec(Writer& w, const ServiceSpec& s) {
  w.s(s.unit);
  writeOptBool(w, s.running);
  writeOptBool(w, s.enabled);
  w.u(s.dropin.size());
  for (const auto& [key, value] : s.dropin) {
    w.s(key);
    w.strings(value);
  }
}

void writeSpec(Writer& w, const AbsentSpec& s) {
  w.s(s.path);
  w.b(s.recursive);
}

void writeOptId(Writer& w, const std::optional<uint32_t>& id) {
  w.u(id ? uint64_t{*id} + 1 : 0);
}
void writeSpec(Writer& w, const UserSpec& s) {
  w.s(s.name);
  writeOptId(w, s.uid);
  w.principal(s.group);
  w.strings(s.groups);
  w.optS(s.home);
  w.s(s.shell);
  w.b(s.system);
}
void writeSpec(Writer& w, const GroupSpec& s) {
  w.s(s.name);
  writeOptId(w, s.gid);
  w.b(s.system);
}

void readFile(Reader& r, FileSpec& s) {
  s.path = r.s();
  s.content = r.optS();
  if (r.b()) s.blob = r.digest();
  s.contentDigest = r.digest();
  readOwnership(r, s);
  if (s.content.has_value() == s.blob.has_value()) throw Malformed{};
}
void readDirectory(Reader& r, DirectorySpec& s) {
  s.path = r.s();
  readOwnership(r, s);
}
void readLink(Reader& r, LinkSpec& s) {
  s.path = r.s();
  s.target = r.s();
}
void readArchive(Reader& r, ArchiveSpec& s) {
  s.path = r.s();
  s.bundle = r.digest();
  s.maxEntries = r.u();
  s.maxBytes = r.u();
  s.replace = r.b();
  s.keepModes = r.b();
}
void readCredential(Reader& r, CredentialSpec& s) {
  s.path = r.s();
  s.from = r.optS();
  s.sealed = r.optS();
  readOwnership(r, s);
}
void readProcess(Reader& r, ProcessSpec& s) {
  s.bundle = r.digest();
  const uint64_t n = r.count();
  for (uint64_t k = 0; k < n; ++k) {
    auto key = r.s();
    s.unit[std::move(key)] = r.strings();
  }
  s.service = r.s();
  if (r.b()) {
    HealthCheck h;
    h.exec = r.s();
    h.intervalMs = static_cast<int64_t>(r.u());
    h.timeoutMs = static_cast<int64_t>(r.u());
    s.health = std::move(h);
  }
}

std::optional<bool> readOptBool(Reader& r) {
  switch (r.u()) {
    case 0:
      return std::nullopt;
    case 1:
      return false;
    case 2:
      return true;
    default:
      throw Malformed{};
  }
}
void readService(Reader& r, ServiceSpec& s) {
  s.unit = r.s();
  s.running = readOptBool(r);
  s.enabled = readOptBool(r);
  const uint64_t n = r.count();
  for (uint64_t k = 0; k < n; ++k) {
    auto key = r.s();
    s.dropin[std::move(key)] = r.strings();
  }
}

void readAbsent(Reader& r, AbsentSpec& s) {
  s.path = r.s();
  s.recursive = r.b();
}

std::optional<uint32_t> readOptId(Reader& r) {
  const uint64_t v = r.u();
  if (v == 0) return std::nullopt;
  if (v > 0xffffffffu) throw Malformed{};
  return static_cast<uint32_t>(v - 1);
}
void readUser(Reader& r, UserSpec& s) {
  s.name = r.s();
  s.uid = readOptId(r);
  s.group = r.principal();
  s.groups = r.strings();
  s.home = r.optS();
  s.shell = r.s();
  s.system = r.b();
}
void readGroup(Reader& r, GroupSpec& s) {
  s.name = r.s();
  s.gid = readOptId(r);
  s.system = r.b();
}

// The compiled form of each kind, one row per kind in Kind's order: a new kind
// fails to compile until it has its row here, its writeSpec and its reader.
struct SpecCodec {
  Kind kind;
  void (*write)(Writer& w, const Spec& spec);
  // Into the alternative of `into` it makes (in place: no spec is moved).
  void (*read)(Reader& r, Spec& into);
};

// Kind K's alternative of Spec (the two are declared in the same order).
template <Kind K>
using SpecOf = std::variant_alternative_t<static_cast<size_t>(K), Spec>;

template <Kind K, void (*Read)(Reader&, SpecOf<K>&)>
constexpr SpecCodec row() {
  return {K, [](Writer& w, const Spec& spec) { writeSpec(w, std::get<SpecOf<K>>(spec)); },
          [](Reader& r, Spec& into) { Read(r, into.template emplace<SpecOf<K>>()); }};
}

constexpr std::array<SpecCodec, kKindCount> kSpecCodecs = {{
    row<Kind::File, readFile>(),
    row<Kind::Directory, readDirectory>(),
    row<Kind::Link, readLink>(),
    row<Kind::Archive, readArchive>(),
    row<Kind::Credential, readCredential>(),
    row<Kind::Process, readProcess>(),
    row<Kind::Service, readService>(),
    row<Kind::Absent, readAbsent>(),
    row<Kind::User, readUser>(),
    row<Kind::Group, readGroup>(),
}};

static_assert(rowsFollowKind(kSpecCodecs));

const SpecCodec& codec(Kind kind) {
  return kSpecCodecs.at(static_cast<size_t>(kind));
}

}  // namespace

void writeDeclaration(Writer& w, const Declaration& d) {
  w.s(d.source);
  w.s(d.baseDir);
  w.optS(d.node);
  w.b(d.serial.has_value());
  if (d.serial) w.u(static_cast<uint64_t>(*d.serial));
  w.b(d.empty);
  w.digest(d.digest);
  w.u(d.resources.size());
  for (const auto& r : d.resources) {
    w.s(r.module());
    w.s(r.name());
    w.u(static_cast<uint64_t>(r.kind));
    w.u(static_cast<uint64_t>(r.onRemove));
    // Nearly always the declaration's own file: one byte then.
    w.b(r.pos.file() == d.source);
    if (r.pos.file() != d.source) w.s(r.pos.file());
    w.u(static_cast<uint64_t>(r.pos.line));
    w.u(static_cast<uint64_t>(r.pos.column));
    w.strings(r.requires_);
    w.strings(r.restartOn);
    w.strings(r.reloadOn);
    codec(r.kind).write(w, r.spec);
    // Made here, once: a cycle over the form builds and hashes none of them.
    w.digest(wantOf(r));
  }
}

Declaration readDeclaration(Reader& r) {
  Declaration d;
  d.source = r.s();
  d.baseDir = r.s();
  d.node = r.optS();
  if (r.b()) {
    const uint64_t serial = r.u();
    if (serial > static_cast<uint64_t>(INT64_MAX)) throw Malformed{};
    d.serial = static_cast<int64_t>(serial);
  }
  d.empty = r.b();
  d.digest = r.digest();
  // One name for every position in the declaration's own file.
  const FileName source = std::make_shared<const std::string>(d.source);
  const uint64_t n = r.count();
  d.resources.reserve(n);
  for (uint64_t k = 0; k < n; ++k) {
    Resource& res = d.resources.emplace_back();
    // Two names of [A-Za-z0-9_-]+: a '.' in either would split the id elsewhere.
    res.id = r.s();
    if (res.id.find('.') != std::string::npos) throw Malformed{};
    const auto name = r.sv();
    if (name.find('.') != std::string_view::npos) throw Malformed{};
    res.id.append(".").append(name);
    const uint64_t kind = r.u();
    if (kind >= kKindCount) throw Malformed{};
    res.kind = static_cast<Kind>(kind);
    const uint64_t onRemove = r.u();
    if (onRemove > static_cast<uint64_t>(OnRemove::Delete)) throw Malformed{};
    res.onRemove = static_cast<OnRemove>(onRemove);
    res.pos.fileName = r.b() ? source : std::make_shared<const std::string>(r.s());
    res.pos.line = r.i();
    res.pos.column = r.i();
    res.requires_ = r.strings();
    res.restartOn = r.strings();
    res.reloadOn = r.strings();
    codec(res.kind).read(r, res.spec);
    res.want = r.digest();
    if (res.want.empty() == wantIsOfSpec(res.kind)) throw Malformed{};
  }
  return d;
}

}  // namespace mesh::decl::form
