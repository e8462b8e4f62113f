#include "decl/kinds.hh"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "decl/accounts.hh"
#include "decl/fields.hh"
#include "decl/health_field.hh"
#include "decl/kind_info.hh"

namespace mesh::decl {

namespace {

// Unit names as systemd accepts them, restricted to services.
bool validServiceName(std::string_view s) {
  constexpr std::string_view suffix = ".service";
  if (s.size() <= suffix.size() || s.size() > 255 || !s.ends_with(suffix)) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
           c == '_' || c == '.' || c == '@' || c == '-';
  });
}

// A relative `from` is relative to the declaration's directory, not to
// wherever the agent happens to run.
std::string resolveFrom(const std::string& from, const std::string& baseDir) {
  std::filesystem::path p(from);
  if (p.is_relative()) p = std::filesystem::path(baseDir) / p;
  if (p.is_relative()) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(p, ec);
    if (!ec) p = absolute;
  }
  return p.lexically_normal().string();
}

void readPath(Fields& f, Draft& d, std::string& out) {
  const toml::node* n = f.find("path");
  if (!n) {
    f.missing("path", "path = \"/etc/app.conf\"");
    return;
  }
  if (auto p = f.path("path")) {
    out = *p;
    d.pathPos = f.at(*n);
  }
}

// Exactly one of two keys; reports both-or-neither at the resource.
void exactlyOne(Fields& f, std::string_view a, std::string_view b, std::string_view example) {
  bool hasA = f.find(a) != nullptr, hasB = f.find(b) != nullptr;
  if (hasA && hasB)
    f.error(f.tablePos(),
            fmt::format("{} has both '{}' and '{}'; keep exactly one", f.subject(), a, b));
  else if (!hasA && !hasB && !f.hadUnknownKeys())
    f.error(f.tablePos(), fmt::format("{} has neither '{}' nor '{}'; add one, e.g. {}", f.subject(),
                                      a, b, example));
}

FileSpec readFile(Fields& f, Draft& d, const ParseOptions& options) {
  f.rejectUnknown({"path", "content", "blob", "mode", "owner", "group", "requires", "on-remove"},
                  {"restart-on", "reload-on"});
  FileSpec s;
  readPath(f, d, s.path);
  exactlyOne(f, "content", "blob", "content = \"…\" or blob = \"sha256:…\"");
  s.content = f.substituted("content");
  s.blob = f.digest("blob");
  s.contentDigest = s.blob ? *s.blob : Digest::ofBytes(s.content.value_or(""));
  if (auto mode = f.mode("mode")) s.mode = *mode;
  s.owner = f.principal("owner", PrincipalKind::User, options);
  s.group = f.principal("group", PrincipalKind::Group, options);
  return s;
}

DirectorySpec readDirectory(Fields& f, Draft& d, const ParseOptions& options) {
  f.rejectUnknown({"path", "mode", "owner", "group", "requires", "on-remove"},
                  {"restart-on", "reload-on"});
  DirectorySpec s;
  readPath(f, d, s.path);
  if (auto mode = f.mode("mode")) s.mode = *mode;
  s.owner = f.principal("owner", PrincipalKind::User, options);
  s.group = f.principal("group", PrincipalKind::Group, options);
  return s;
}

LinkSpec readLink(Fields& f, Draft& d, const ParseOptions&) {
  f.rejectUnknown({"path", "target", "requires", "on-remove"}, {"restart-on", "reload-on"});
  LinkSpec s;
  readPath(f, d, s.path);
  if (!f.find("target")) f.missing("target", "target = \"/opt/app/current\"");
  if (auto target = f.substituted("target", Text::Plain)) s.target = *target;
  return s;
}

ArchiveSpec readArchive(Fields& f, Draft& d, const ParseOptions&) {
  f.rejectUnknown({"path", "bundle", "max-entries", "max-bytes", "replace", "keep-modes",
                   "requires", "on-remove"},
                  {"restart-on", "reload-on"});
  ArchiveSpec s;
  readPath(f, d, s.path);
  if (!f.find("bundle")) f.missing("bundle", "bundle = \"sha256:…\"");
  if (auto bundle = f.digest("bundle")) s.bundle = *bundle;
  if (auto n = f.positive("max-entries")) s.maxEntries = *n;
  if (auto n = f.positive("max-bytes")) s.maxBytes = *n;
  if (auto b = f.boolean("replace")) s.replace = *b;
  if (auto b = f.boolean("keep-modes")) s.keepModes = *b;
  return s;
}

CredentialSpec readCredential(Fields& f, Draft& d, const ParseOptions& options) {
  f.rejectUnknown({"path", "from", "sealed", "mode", "owner", "group", "requires", "on-remove"},
                  {"restart-on", "reload-on"});
  CredentialSpec s;
  readPath(f, d, s.path);
  exactlyOne(f, "from", "sealed", "sealed = \"…\" (from mesh-host seal)");
  if (auto from = f.string("from", Text::Plain)) s.from = resolveFrom(*from, options.baseDir);
  s.sealed = f.string("sealed", Text::NonEmpty);
  if (auto mode = f.mode("mode")) s.mode = *mode;
  s.owner = f.principal("owner", PrincipalKind::User, options);
  s.group = f.principal("group", PrincipalKind::Group, options);
  return s;
}

ProcessSpec readProcess(Fields& f, Draft& d, const ParseOptions&) {
  f.rejectUnknown({"bundle", "unit", "service", "health", "restart-on", "reload-on", "requires"},
                  {"on-remove"});
  ProcessSpec s;
  if (!f.find("bundle")) f.missing("bundle", "bundle = \"sha256:…\"");
  if (auto bundle = f.digest("bundle")) s.bundle = *bundle;
  if (!f.find("unit")) f.missing("unit", "unit = { ExecStart = \"{bundle}/bin/app\" }");
  if (auto unit = f.unit("unit")) s.unit = std::move(*unit);
  s.service = std::string(d.resource.module()) + ".service";
  d.servicePos = d.resource.pos;
  if (const toml::node* n = f.find("service")) {
    auto service = f.string("service", Text::Line);
    if (service && !validServiceName(*service)) {
      f.error(f.at(*n),
              fmt::format("service '{}' in {} is not a valid service name; use letters, digits "
                          "and ':_.@-', ending in \".service\", e.g. \"{}-{}.service\"",
                          shown(*service), f.subject(), d.resource.module(), d.resource.name()));
    } else if (service) {
      s.service = *service;
      d.servicePos = f.at(*n);
    }
  }
  s.health = readHealth(f);
  d.restartOn = f.ids("restart-on");
  d.reloadOn = f.ids("reload-on");
  return s;
}

// `service`: a unit mesh-host did not install. Its name is checked as a
// process's `service` is; its drop-in's keys as a process's unit keys.
ServiceSpec readService(Fields& f, Draft& d, const ParseOptions&) {
  f.rejectUnknown({"unit", "state", "enabled", "dropin", "restart-on", "reload-on", "requires"});
  ServiceSpec s;
  d.servicePos = d.resource.pos;
  if (const toml::node* n = f.find("unit")) {
    auto unit = f.string("unit", Text::Line);
    if (unit && !validServiceName(*unit)) {
      f.error(f.at(*n), fmt::format("unit '{}' in {} is not a valid service name; use letters, "
                                    "digits and ':_.@-', ending in \".service\", e.g. "
                                    "\"nginx.service\"",
                                    shown(*unit), f.subject()));
    } else if (unit) {
      s.unit = *unit;
      d.servicePos = f.at(*n);
    }
  } else {
    f.missing("unit", "unit = \"nginx.service\"");
  }
  if (const toml::node* n = f.find("state")) {
    auto state = f.string("state", Text::Line);
    if (state && (*state == "running" || *state == "stopped"))
      s.running = *state == "running";
    else if (state)
      f.error(f.at(*n), fmt::format("state '{}' in {} is not a service state; use \"running\" or "
                                    "\"stopped\" (or leave it out: left as found)",
                                    shown(*state), f.subject()));
  }
  s.enabled = f.boolean("enabled");
  if (auto dropin = f.unit("dropin", false)) s.dropin = std::move(*dropin);
  d.restartOn = f.ids("restart-on");
  d.reloadOn = f.ids("reload-on");
  return s;
}

AbsentSpec readAbsent(Fields& f, Draft& d, const ParseOptions&) {
  f.rejectUnknown({"path", "recursive", "requires"}, {"restart-on", "reload-on", "on-remove"});
  AbsentSpec s;
  readPath(f, d, s.path);
  if (auto b = f.boolean("recursive")) s.recursive = *b;
  return s;
}

// Whether a kind takes `on-remove`: those that write a path over what may have
// been there before.
bool takesOnRemove(Kind k) {
  return k == Kind::File || k == Kind::Directory || k == Kind::Link || k == Kind::Archive ||
         k == Kind::Credential;
}

void readOnRemove(Fields& f, Draft& d) {
  const toml::node* n = f.find("on-remove");
  if (!n) return;
  if (!takesOnRemove(d.resource.kind)) {
    f.error(f.at(*n), fmt::format("'on-remove' is not for {}; it is for file, directory, link, "
                                  "archive and credential",
                                  d.subject()));
    return;
  }
  auto v = f.string("on-remove");
  if (!v) return;
  for (OnRemove o : {OnRemove::Restore, OnRemove::Keep, OnRemove::Delete})
    if (*v == onRemoveName(o)) {
      d.resource.onRemove = o;
      return;
    }
  f.error(f.at(*n), fmt::format("on-remove '{}' in {} is not one of \"restore\", \"keep\", "
                                "\"delete\"; e.g. on-remove = \"keep\"",
                                shown(*v), d.subject()));
}

// A reader as the table holds it: any kind's reader, returning the Spec.
template <auto reader>
Spec readAs(Fields& f, Draft& d, const ParseOptions& options) {
  return reader(f, d, options);
}

std::vector<Digest> noBlobs(const Spec&) {
  return {};
}

std::vector<Digest> fileBlobs(const Spec& s) {
  const auto& file = std::get<FileSpec>(s);
  if (file.blob) return {*file.blob};
  return {};
}

template <typename S>
std::vector<Digest> bundleOf(const Spec& s) {
  return {std::get<S>(s).bundle};
}

}  // namespace

constexpr std::array<KindInfo, kKindCount> kKindTable = {{
    {Kind::File, "file", readAs<readFile>, fileBlobs},
    {Kind::Directory, "directory", readAs<readDirectory>, noBlobs},
    {Kind::Link, "link", readAs<readLink>, noBlobs},
    {Kind::Archive, "archive", readAs<readArchive>, bundleOf<ArchiveSpec>},
    {Kind::Credential, "credential", readAs<readCredential>, noBlobs},
    {Kind::Process, "process", readAs<readProcess>, bundleOf<ProcessSpec>},
    {Kind::Service, "service", readAs<readService>, noBlobs},
    {Kind::Absent, "absent", readAs<readAbsent>, noBlobs},
    {Kind::User, "user", readAs<readUser>, noBlobs},
    {Kind::Group, "group", readAs<readGroup>, noBlobs},
}};

static_assert(rowsFollowKind(kKindTable));

const KindInfo& kindInfo(Kind k) {
  return kKindTable.at(static_cast<size_t>(k));
}

const char* kindName(Kind k) {
  return kindInfo(k).name.data();
}

std::optional<Kind> kindFromName(std::string_view name) {
  for (const auto& info : kKindTable)
    if (name == info.name) return info.kind;
  return std::nullopt;
}

std::string kindList() {
  std::string out;
  for (const auto& info : kKindTable) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

Draft readResource(const ResourceHeader& header, const toml::table& table, Diagnostics& diags,
                   const ParseOptions& options) {
  Draft d;
  Resource& r = d.resource;
  r.id = header.module + "." + header.name;
  r.kind = header.kind;
  r.pos = header.pos;
  Fields f(table, header.pos, d.subject(), diags);
  f.collectAccounts(&d.accounts);
  const Placeholders placeholders{options.node, options.cluster};
  f.substituteWith(&placeholders);

  for (const char* key : {"restart-on", "reload-on"})
    if (auto it = table.find(key);
        it != table.end() && r.kind != Kind::Process && r.kind != Kind::Service)
      f.error(positionOf(diags, it->first.source()),
              fmt::format("'{}' is only for processes, not {}; use 'requires' to order it "
                          "after other resources",
                          key, d.subject()));
  d.requires_ = f.ids("requires");

  r.spec = kindInfo(r.kind).read(f, d, options);
  readOnRemove(f, d);
  return d;
}

}  // namespace mesh::decl
