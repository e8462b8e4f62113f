#include "decl/validate.hh"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "decl/fields.hh"

namespace mesh::decl {

namespace {

using IdIndex = std::map<std::string_view, const Resource*>;  // views of their ids

// What to tell someone who wrote an id that is not declared.
std::string unknownIdHint(const std::string& id, const Resource& from, const IdIndex& ids) {
  auto dot = id.find('.');
  if (dot == std::string::npos) {
    std::string local = std::string(from.module()) + "." + id;
    if (ids.count(local)) return fmt::format("ids are <module>.<name>: did you mean '{}'?", local);
    return "ids are written <module>.<name>";
  }
  std::string module = id.substr(0, dot);  // shown() below: it may hold anything
  std::vector<std::string> inModule, modules;
  for (const auto& [known, r] : ids) {
    if (r->module() == module) inModule.push_back(std::string(known));
    if (modules.empty() || modules.back() != r->module())
      modules.push_back(std::string(r->module()));
  }
  constexpr size_t kShown = 12;
  auto shortList = [&](std::vector<std::string> v) {
    bool more = v.size() > kShown;
    if (more) v.resize(kShown);
    return fmt::format("{}{}", fmt::join(v, ", "), more ? ", …" : "");
  };
  if (!inModule.empty())
    return fmt::format("declared ids in module {}: {}", module, shortList(inModule));
  return fmt::format("no module '{}' is declared (modules: {})", shown(module), shortList(modules));
}

// Keeps the refs that name another declared resource; reports the rest.
std::vector<std::string> resolve(const std::vector<Ref>& refs, std::string_view key,
                                 const Resource& from, const IdIndex& ids, Diagnostics& diags) {
  std::vector<std::string> out;
  for (const Ref& ref : refs) {
    if (ref.id == from.id) {
      diags.error(ref.pos, fmt::format("{} lists itself in {}; remove '{}'", subjectOf(from), key,
                                       shown(ref.id)));
    } else if (!ids.count(ref.id)) {
      diags.error(ref.pos, fmt::format("unknown id '{}' in {} of {}; {}", shown(ref.id), key,
                                       subjectOf(from), unknownIdHint(ref.id, from, ids)));
    } else {
      out.push_back(ref.id);
    }
  }
  return out;
}

// Is `path` strictly beneath `dir`? Component-wise: "/srv/app2" is not
// beneath "/srv/app".
bool isBeneath(std::string_view path, std::string_view dir) {
  return path.size() > dir.size() && path[dir.size()] == '/' && path.starts_with(dir);
}

// Path order in which '/' sorts before every other byte, so that everything
// beneath a path follows it directly: "/a", "/a/b", "/a-b" (byte order would
// put "/a-b" between "/a" and "/a/b").
bool pathLess(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    if (a[i] == '/') return true;
    if (b[i] == '/') return false;
    return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  return a.size() < b.size();
}

// Paths of the declared archives, links and absents, which nothing may lie beneath.
using Containers = std::set<std::string, std::less<>>;

// Where `inner` would be if declared through what `link` points to, when that
// is a plain absolute path not itself beneath an archive or link; "" otherwise.
std::string throughLink(const Resource& inner, const Resource& link, const Containers& containers) {
  const auto& target = std::get<LinkSpec>(link.spec).target;
  std::filesystem::path resolved(target);
  if (resolved.is_relative())
    resolved = std::filesystem::path(link.path()).parent_path() / resolved;
  std::string path = resolved.lexically_normal().string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();  // "a/." normalises to "a/"
  path += inner.path().substr(link.path().size());
  if (pathProblem(path)) return "";
  for (std::string_view up = path; !up.empty(); up = up.substr(0, up.rfind('/')))
    if (containers.count(up)) return "";
  return path;
}

// `inner` lies strictly beneath `outer`, an archive or a link.
void reportInside(const Drafts& drafts, size_t inner, size_t outer, const Containers& containers,
                  Diagnostics& diags) {
  const Resource& r = drafts.resources[inner];
  const Resource& o = drafts.resources[outer];
  const std::string& dir = o.path();
  std::string what = fmt::format("{} at '{}' is {} {} at '{}' (at {})", subjectOf(r),
                                 shown(r.path()), o.kind != Kind::Archive ? "beneath" : "inside",
                                 subjectOf(o), shown(dir), drafts.sides[outer].pathPos.str());
  std::string why;
  if (o.kind == Kind::Absent) {
    why = fmt::format(
        "an absent path holds nothing, so nothing can be declared beneath it; declare it "
        "elsewhere or drop {}",
        subjectOf(o));
  } else if (o.kind == Kind::Link) {
    std::string instead = throughLink(r, o, containers);
    why = fmt::format(
        "mesh-host never follows links inside declared paths, so it could never reach it; "
        "declare it at the path the link points to{} or drop the link",
        instead.empty() ? "" : fmt::format(" ('{}')", shown(instead)));
  } else if (r.kind == Kind::Archive) {
    why = fmt::format(
        "mesh-host replaces an archive's tree whole, so one archive cannot hold another; "
        "declare it outside {} or merge the two bundles",
        shown(dir));
  } else if (r.kind == Kind::Credential) {
    why = fmt::format(
        "mesh-host replaces an archive's tree whole, so it would delete the credential or "
        "count it as drift; declare it outside {} (a secret does not belong in a bundle)",
        shown(dir));
  } else {
    why = fmt::format(
        "mesh-host replaces an archive's tree whole, so it would delete the {} or count it "
        "as drift; declare it outside {} or put the {} in the bundle",
        kindName(r.kind), shown(dir), kindName(r.kind));
  }
  diags.error(drafts.sides[inner].pathPos, fmt::format("{}; {}", what, why));
}

// Nothing may be declared inside an archive (its tree is replaced whole) or
// beneath a link (never followed). One sort and one sweep: a path's
// descendants follow it in pathLess order, and a stack holds the chain of
// declared paths above the current one.
void checkNesting(const Drafts& drafts, Diagnostics& diags) {
  const std::vector<Resource>& rs = drafts.resources;
  constexpr size_t kNone = SIZE_MAX;
  std::vector<uint32_t> sorted;
  sorted.reserve(rs.size());
  Containers containers;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].path().empty()) continue;
    sorted.push_back(static_cast<uint32_t>(i));
    if (rs[i].kind == Kind::Archive || rs[i].kind == Kind::Link || rs[i].kind == Kind::Absent)
      containers.insert(rs[i].path());
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](uint32_t a, uint32_t b) { return pathLess(rs[a].path(), rs[b].path()); });
  struct Above {
    size_t draft;
    size_t outer;      // the outermost archive or link strictly above it, if any
    size_t container;  // the outermost archive or link at or above it, if any
  };
  std::vector<Above> chain;
  for (const uint32_t d : sorted) {
    const std::string& path = rs[d].path();
    auto atOrAbove = [&](const Above& a) {
      const std::string& up = rs[a.draft].path();
      return up == path || isBeneath(path, up);
    };
    while (!chain.empty() && !atOrAbove(chain.back())) chain.pop_back();
    // A path equal to the one above is a duplicate (reported as such): it is
    // inside whatever that one is inside, and closes what that one closes.
    bool duplicate = !chain.empty() && rs[chain.back().draft].path() == path;
    const size_t outer = chain.empty() ? kNone
                         : duplicate   ? chain.back().outer
                                       : chain.back().container;
    if (outer != kNone) reportInside(drafts, d, outer, containers, diags);
    Kind kind = rs[d].kind;
    size_t container = outer;
    if (container == kNone && (kind == Kind::Archive || kind == Kind::Link || kind == Kind::Absent))
      container = d;
    if (container == kNone && duplicate) container = chain.back().container;
    chain.push_back({d, outer, container});
  }
}

// mesh-host's own state (store, keys, bundles) is not for declaring.
void checkStateDir(const Drafts& drafts, std::string_view stateDir, Diagnostics& diags) {
  if (stateDir.empty()) return;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const Resource& r = drafts.resources[i];
    const std::string& path = r.path();
    if (path.empty()) continue;
    if (path == stateDir || isBeneath(path, stateDir))
      diags.error(drafts.sides[i].pathPos,
                  fmt::format("{} at '{}' is inside mesh-host's state directory {} "
                              "(--state-dir), which holds its state store, keys and process "
                              "bundles; declare it elsewhere or run with another --state-dir",
                              subjectOf(r), shown(path), shown(stateDir)));
    else if (r.kind == Kind::Archive && isBeneath(stateDir, path))
      diags.error(drafts.sides[i].pathPos,
                  fmt::format("{} at '{}' would replace mesh-host's state directory {} "
                              "(--state-dir) with the bundle's tree; declare it elsewhere or run "
                              "with another --state-dir",
                              subjectOf(r), shown(path), shown(stateDir)));
  }
}

}  // namespace

void checkAcross(Drafts& drafts, Diagnostics& diags, std::string_view stateDir) {
  IdIndex ids;
  // Views of the resources' own strings, each to the index of the first to name it.
  std::map<std::string_view, size_t> paths, services;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const Resource& r = drafts.resources[i];
    const DraftSide& d = drafts.sides[i];
    if (auto [it, fresh] = ids.emplace(r.id, &r); !fresh)
      diags.error(r.pos,
                  fmt::format("duplicate id '{}': {} here and {} at {}; ids are "
                              "<module>.<name> across all kinds, so rename one",
                              r.id, subjectOf(r), subjectOf(*it->second), it->second->pos.str()));
    if (!r.path().empty()) {
      if (auto [it, fresh] = paths.emplace(r.path(), i); !fresh)
        diags.error(d.pathPos,
                    fmt::format("duplicate path '{}': {} and {} (at {}) both manage "
                                "it; keep one of them",
                                shown(r.path()), subjectOf(r), drafts.subject(it->second),
                                drafts.sides[it->second].pathPos.str()));
    }
    if (std::holds_alternative<ServiceSpec>(r.spec) && !r.service()->empty()) {
      if (auto [it, fresh] = services.emplace(*r.service(), i); !fresh)
        diags.error(d.servicePos,
                    fmt::format("duplicate service '{}': {} and {} (at {}) both drive it; keep "
                                "one of them",
                                *r.service(), subjectOf(r), drafts.subject(it->second),
                                drafts.sides[it->second].servicePos.str()));
    }
    if (const auto* process = std::get_if<ProcessSpec>(&r.spec)) {
      if (auto [it, fresh] = services.emplace(process->service, i); !fresh)
        diags.error(d.servicePos,
                    fmt::format("duplicate service '{}': {} and {} (at {}) both run as it; give "
                                "one of them its own service = \"<name>.service\"",
                                process->service, subjectOf(r), drafts.subject(it->second),
                                drafts.sides[it->second].servicePos.str()));
    }
  }
  checkNesting(drafts, diags);
  checkStateDir(drafts, stateDir, diags);
  for (size_t i = 0; i < drafts.size(); ++i) {
    Resource& r = drafts.resources[i];
    const DraftSide& d = drafts.sides[i];
    r.requires_ = resolve(d.requires_, "requires", r, ids, diags);
    r.restartOn = resolve(d.restartOn, "restart-on", r, ids, diags);
    r.reloadOn = resolve(d.reloadOn, "reload-on", r, ids, diags);
    // One change cannot both restart and reload the same process: say which.
    for (const Ref& ref : d.reloadOn)
      if (std::find(r.restartOn.begin(), r.restartOn.end(), ref.id) != r.restartOn.end())
        diags.error(ref.pos, fmt::format("{} lists '{}' in both restart-on and reload-on; keep it "
                                         "in one (restart-on restarts the service, reload-on "
                                         "reloads it)",
                                         subjectOf(r), shown(ref.id)));
  }
}

}  // namespace mesh::decl
