#include "decl/compiled.hh"

#include <elf.h>
#include <link.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <set>
#include <type_traits>
#include <variant>

#include "decl/kind_info.hh"
#include "decl/want.hh"
#include "util/digest.hh"

// XXH3-128, header-only (no shared library): the form's checksum.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mesh::decl {

namespace {

constexpr std::string_view kMagic = "mesh-host compiled declaration\n";
// Bump with any change of the layout below (the build-id changes too, but a
// build without one relies on this).
constexpr uint64_t kFormat = 5;

// A field added to the model must be written and read here too: these fail to
// compile until this file has been looked at (and the sizes updated).
static_assert(sizeof(FileSpec) == 224, "FileSpec changed: update compiled.cc");
static_assert(sizeof(DirectorySpec) == 120, "DirectorySpec changed: update compiled.cc");
static_assert(sizeof(LinkSpec) == 64, "LinkSpec changed: update compiled.cc");
static_assert(sizeof(ArchiveSpec) == 96, "ArchiveSpec changed: update compiled.cc");
static_assert(sizeof(CredentialSpec) == 200, "CredentialSpec changed: update compiled.cc");
static_assert(sizeof(ProcessSpec) == 120, "ProcessSpec changed: update compiled.cc");
static_assert(sizeof(ServiceSpec) == 88, "ServiceSpec changed: update compiled.cc");
static_assert(sizeof(Resource) == 400, "Resource changed: update compiled.cc");
static_assert(sizeof(Declaration) == 224, "Declaration changed: update compiled.cc");

class Writer {
 public:
  void u(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void s(std::string_view v) {
    u(v.size());
    out_.append(v);
  }
  void b(bool v) { u(v ? 1 : 0); }
  // Its 32 raw bytes after their count; none is a count of 0.
  void digest(const Digest& d) {
    if (d.empty()) return u(0);
    u(d.raw().size());
    out_.append(reinterpret_cast<const char*>(d.raw().data()), d.raw().size());
  }
  void optS(const std::optional<std::string>& v) {
    b(v.has_value());
    if (v) s(*v);
  }
  void principal(const std::optional<Principal>& p) {
    b(p.has_value());
    if (p) s(p->name);
  }
  void strings(const std::vector<std::string>& v) {
    u(v.size());
    for (const auto& x : v) s(x);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

struct Malformed {};

// The form's checksum: XXH3-128 of everything before it, its 16 bytes in
// canonical (big-endian) order. Not a cryptographic hash, and it need not be:
// it guards against accidental damage (a torn write, a bad disk) of a store
// that only root can write; trust comes from the key (compiledKey, a SHA-256).
constexpr size_t kSum = sizeof(XXH128_canonical_t);

std::string sumText(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  return std::string(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
}

// The checksum of a form read in pieces.
class Checksum {
 public:
  Checksum() : state_(XXH3_createState()) {
    if (state_ == nullptr) throw std::bad_alloc();
    XXH3_128bits_reset(state_);
  }
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  ~Checksum() { XXH3_freeState(state_); }
  void update(std::string_view bytes) { XXH3_128bits_update(state_, bytes.data(), bytes.size()); }
  std::string finish() const { return sumText(XXH3_128bits_digest(state_)); }

 private:
  XXH3_state_t* state_;
};

std::string checksumOf(std::string_view bytes) {
  return sumText(XXH3_128bits(bytes.data(), bytes.size()));
}

// Reads a form held whole (a view of it), or in pieces fetched as they are
// reached (FormSource: the form is not held whole, only a window of it), hashing
// each piece as it comes so that the caller can check the form's checksum at the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : window_(in), size_(in.size()) {}
  // The `size` bytes of `source` from `base` on.
  Reader(const FormSource& source, size_t base, size_t size, Checksum& hasher)
      : source_(&source), hasher_(&hasher), base_(base), size_(size) {}

  uint64_t u() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto byte = static_cast<unsigned char>(next());
      v |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) return v;
    }
    throw Malformed{};
  }
  // Valid until the next read.
  std::string_view sv() {
    const uint64_t n = u();
    if (n > size_ - at_) throw Malformed{};
    return take(static_cast<size_t>(n));
  }
  std::string s() { return std::string(sv()); }
  bool b() {
    const uint64_t v = u();
    if (v > 1) throw Malformed{};
    return v == 1;
  }
  mode_t mode() {
    const uint64_t v = u();
    if (v > 07777) throw Malformed{};
    return static_cast<mode_t>(v);
  }
  int i() {
    const uint64_t v = u();
    if (v > 0x7fffffff) throw Malformed{};
    return static_cast<int>(v);
  }
  Digest digest() {
    const auto bytes = sv();
    if (bytes.empty()) return Digest::none();
    std::array<uint8_t, 32> raw;
    if (bytes.size() != raw.size()) throw Malformed{};
    std::memcpy(raw.data(), bytes.data(), raw.size());
    return Digest::fromRaw(raw);
  }
  std::optional<std::string> optS() {
    if (!b()) return std::nullopt;
    return s();
  }
  std::optional<Principal> principal() {
    if (!b()) return std::nullopt;
    return Principal{s()};
  }
  std::vector<std::string> strings() {
    const uint64_t n = count();
    std::vector<std::string> v;
    v.reserve(n);
    for (uint64_t k = 0; k < n; ++k) v.push_back(s());
    return v;
  }
  // A count of items that take at least a byte each.
  uint64_t count() {
    const uint64_t n = u();
    if (n > size_ - at_) throw Malformed{};
    return n;
  }
  bool done() const { return at_ == size_; }

 private:
  static constexpr size_t kPiece = 64 * 1024;

  char next() {
    if (at_ >= size_) throw Malformed{};
    if (pos_ == window_.size()) fetch();
    ++at_;
    return window_[pos_++];
  }
  // n bytes (n <= what is left): a view of the window when they lie in it.
  std::string_view take(size_t n) {
    if (n <= window_.size() - pos_) {
      const auto v = window_.substr(pos_, n);
      pos_ += n;
      at_ += n;
      return v;
    }
    scratch_.clear();
    scratch_.reserve(n);
    while (n > 0) {
      if (pos_ == window_.size()) fetch();
      const size_t k = std::min(n, window_.size() - pos_);
      scratch_.append(window_.substr(pos_, k));
      pos_ += k;
      at_ += k;
      n -= k;
    }
    return scratch_;
  }
  // The next piece (only of a FormSource: a form held whole is all in the window).
  void fetch() {
    const size_t n = std::min(kPiece, size_ - at_);
    if (source_ == nullptr || n == 0) throw Malformed{};
    piece_.resize(n);
    if (!source_->read(base_ + at_, piece_.data(), n)) throw Malformed{};
    hasher_->update(piece_);
    window_ = piece_;
    pos_ = 0;
  }

  const FormSource* source_ = nullptr;
  Checksum* hasher_ = nullptr;
  std::string_view window_;  // what is held of the form, from at_ - pos_
  std::string piece_, scratch_;
  size_t base_ = 0;  // where in the source the bytes read start
  size_t size_ = 0;  // how many there are
  size_t at_ = 0;    // in the payload
  size_t pos_ = 0;   // in the window
};

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
}};

static_assert(rowsFollowKind(kSpecCodecs));

const SpecCodec& codec(Kind kind) {
  return kSpecCodecs.at(static_cast<size_t>(kind));
}

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

// Every name the declaration gives as a user or a group (numeric ids are not looked up).
void principals(const Declaration& d, std::set<std::string>& users, std::set<std::string>& groups) {
  auto add = [](std::set<std::string>& into, const std::optional<Principal>& p) {
    if (p && !p->name.empty() &&
        !std::all_of(p->name.begin(), p->name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      into.insert(p->name);
  };
  for (const auto& r : d.resources)
    std::visit(
        [&](const auto& s) {
          if constexpr (requires { s.owner; }) {
            add(users, s.owner);
            add(groups, s.group);
          }
        },
        r.spec);
}

// The main program's GNU build-id note, as hex; "" when it has none.
std::string buildId() {
  std::string id;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) -> int {
        auto& hex = *static_cast<std::string*>(out);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* at = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = at + ph.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(at);
            const char* name = at + sizeof(ElfW(Nhdr));
            const char* desc = name + ((nh->n_namesz + 3) & ~3u);
            const char* next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              hex = toHex(reinterpret_cast<const unsigned char*>(desc), nh->n_descsz);
              return 1;
            }
            at = next;
          }
        }
        return 1;  // the first object is the main program: stop there
      },
      &id);
  return id;
}

}  // namespace

const std::string& binaryIdentity() {
  static const std::string identity = [] {
    std::string id = buildId();
    // Without a build-id, the version and when this file was compiled.
    return std::string("mesh-host ") + MESH_HOST_VERSION + " " +
           (id.empty() ? std::string(__DATE__ " " __TIME__) : id);
  }();
  return identity;
}

std::string compiledKey(const Digest& textDigest, const std::string& source,
                        const ParseOptions& options) {
  Writer w;
  w.s(kMagic);
  w.u(kFormat);
  w.s(binaryIdentity());
  w.s(textDigest.str());
  w.s(source);
  w.s(options.node);
  w.s(options.cluster ? "cluster:" + *options.cluster : std::string());
  w.s(options.baseDir);
  w.s(options.stateDir);
  return Digest::ofBytes(w.out()).str();
}

std::string compileDeclaration(const Declaration& d) {
  Writer w;
  w.out().append(kMagic);
  w.u(kFormat);
  writeDeclaration(w, d);
  w.out().append(checksumOf(w.out()));
  return std::move(w.out());
}

namespace {

// What the form holds is this text's, and names only users and groups that exist.
bool fits(const Declaration& d, const Digest& textDigest, const ParseOptions& options) {
  if (d.digest != textDigest) return false;
  std::set<std::string> users, groups;
  principals(d, users, groups);
  for (const auto& u : users)
    if (options.userExists && !options.userExists(u)) return false;
  for (const auto& g : groups)
    if (options.groupExists && !options.groupExists(g)) return false;
  return true;
}

}  // namespace

std::optional<Declaration> loadCompiled(const FormSource& form, const Digest& textDigest,
                                        const ParseOptions& options) {
  if (form.size < kMagic.size() + kSum) return std::nullopt;
  const size_t payload = form.size - kSum;
  std::string magic(kMagic.size(), '\0'), sum(kSum, '\0');
  if (!form.read(0, magic.data(), magic.size()) || magic != kMagic) return std::nullopt;
  if (!form.read(payload, sum.data(), sum.size())) return std::nullopt;
  std::optional<Declaration> d;
  Checksum hasher;
  hasher.update(magic);
  try {
    Reader r(form, kMagic.size(), payload - kMagic.size(), hasher);
    if (r.u() != kFormat) return std::nullopt;
    d = readDeclaration(r);
    if (!r.done()) return std::nullopt;
  } catch (const Malformed&) {
    return std::nullopt;
  }
  // Decoded as it was read: whatever it says counts only if its sum is right.
  if (hasher.finish() != sum) return std::nullopt;
  if (!fits(*d, textDigest, options)) return std::nullopt;
  return d;
}

std::optional<Declaration> loadCompiled(std::string_view form, const Digest& textDigest,
                                        const ParseOptions& options) {
  if (form.size() < kMagic.size() + kSum || !form.starts_with(kMagic)) return std::nullopt;
  const auto payload = form.substr(0, form.size() - kSum);
  if (checksumOf(payload) != form.substr(payload.size())) return std::nullopt;
  std::optional<Declaration> d;
  try {
    Reader r(payload.substr(kMagic.size()));
    if (r.u() != kFormat) return std::nullopt;
    d = readDeclaration(r);
    if (!r.done()) return std::nullopt;
  } catch (const Malformed&) {
    return std::nullopt;
  }
  if (!fits(*d, textDigest, options)) return std::nullopt;
  return d;
}

}  // namespace mesh::decl
