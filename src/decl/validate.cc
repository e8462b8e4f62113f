#include "decl/validate.hh"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "decl/fields.hh"

namespace mesh::decl {

namespace {

using IdIndex = std::map<std::string, const Draft*>;

// What to tell someone who wrote an id that is not declared.
std::string unknownIdHint(const std::string& id, const Draft& from, const IdIndex& ids) {
  auto dot = id.find('.');
  if (dot == std::string::npos) {
    std::string local = std::string(from.resource.module()) + "." + id;
    if (ids.count(local)) return fmt::format("ids are <module>.<name>: did you mean '{}'?", local);
    return "ids are written <module>.<name>";
  }
  std::string module = id.substr(0, dot);  // shown() below: it may hold anything
  std::vector<std::string> inModule, modules;
  for (const auto& [known, draft] : ids) {
    if (draft->resource.module() == module) inModule.push_back(known);
    if (modules.empty() || modules.back() != draft->resource.module())
      modules.push_back(std::string(draft->resource.module()));
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
                                 const Draft& from, const IdIndex& ids, Diagnostics& diags) {
  std::vector<std::string> out;
  for (const Ref& ref : refs) {
    if (ref.id == from.resource.id) {
      diags.error(ref.pos, fmt::format("{} lists itself in {}; remove '{}'", from.subject(), key,
                                       shown(ref.id)));
    } else if (!ids.count(ref.id)) {
      diags.error(ref.pos, fmt::format("unknown id '{}' in {} of {}; {}", shown(ref.id), key,
                                       from.subject(), unknownIdHint(ref.id, from, ids)));
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
void reportInside(const Draft& inner, const Draft& outer, const Containers& containers,
                  Diagnostics& diags) {
  const Resource& r = inner.resource;
  const std::string& dir = outer.resource.path();
  std::string what =
      fmt::format("{} at '{}' is {} {} at '{}' (at {})", inner.subject(), shown(r.path()),
                  outer.resource.kind != Kind::Archive ? "beneath" : "inside", outer.subject(),
                  shown(dir), outer.pathPos.str());
  std::string why;
  if (outer.resource.kind == Kind::Absent) {
    why = fmt::format(
        "an absent path holds nothing, so nothing can be declared beneath it; declare it "
        "elsewhere or drop {}",
        outer.subject());
  } else if (outer.resource.kind == Kind::Link) {
    std::string instead = throughLink(r, outer.resource, containers);
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
  diags.error(inner.pathPos, fmt::format("{}; {}", what, why));
}

// Nothing may be declared inside an archive (its tree is replaced whole) or
// beneath a link (never followed). One sort and one sweep: a path's
// descendants follow it in pathLess order, and a stack holds the chain of
// declared paths above the current one.
void checkNesting(const std::vector<Draft>& drafts, Diagnostics& diags) {
  std::vector<const Draft*> sorted;
  sorted.reserve(drafts.size());
  Containers containers;
  for (const Draft& d : drafts) {
    if (d.resource.path().empty()) continue;
    sorted.push_back(&d);
    if (d.resource.kind == Kind::Archive || d.resource.kind == Kind::Link ||
        d.resource.kind == Kind::Absent)
      containers.insert(d.resource.path());
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const Draft* a, const Draft* b) {
    return pathLess(a->resource.path(), b->resource.path());
  });
  struct Above {
    const Draft* draft;
    const Draft* outer;      // the outermost archive or link strictly above it, if any
    const Draft* container;  // the outermost archive or link at or above it, if any
  };
  std::vector<Above> chain;
  for (const Draft* d : sorted) {
    const std::string& path = d->resource.path();
    auto atOrAbove = [&](const Above& a) {
      const std::string& up = a.draft->resource.path();
      return up == path || isBeneath(path, up);
    };
    while (!chain.empty() && !atOrAbove(chain.back())) chain.pop_back();
    // A path equal to the one above is a duplicate (reported as such): it is
    // inside whatever that one is inside, and closes what that one closes.
    bool duplicate = !chain.empty() && chain.back().draft->resource.path() == path;
    const Draft* outer = chain.empty() ? nullptr
                         : duplicate   ? chain.back().outer
                                       : chain.back().container;
    if (outer) reportInside(*d, *outer, containers, diags);
    Kind kind = d->resource.kind;
    const Draft* container = outer;
    if (!container && (kind == Kind::Archive || kind == Kind::Link || kind == Kind::Absent))
      container = d;
    if (!container && duplicate) container = chain.back().container;
    chain.push_back({d, outer, container});
  }
}

// mesh-host's own state (store, keys, bundles) is not for declaring.
void checkStateDir(const std::vector<Draft>& drafts, std::string_view stateDir,
                   Diagnostics& diags) {
  if (stateDir.empty()) return;
  for (const Draft& d : drafts) {
    const std::string& path = d.resource.path();
    if (path.empty()) continue;
    if (path == stateDir || isBeneath(path, stateDir))
      diags.error(d.pathPos,
                  fmt::format("{} at '{}' is inside mesh-host's state directory {} "
                              "(--state-dir), which holds its state store, keys and process "
                              "bundles; declare it elsewhere or run with another --state-dir",
                              d.subject(), shown(path), shown(stateDir)));
    else if (d.resource.kind == Kind::Archive && isBeneath(stateDir, path))
      diags.error(d.pathPos,
                  fmt::format("{} at '{}' would replace mesh-host's state directory {} "
                              "(--state-dir) with the bundle's tree; declare it elsewhere or run "
                              "with another --state-dir",
                              d.subject(), shown(path), shown(stateDir)));
  }
}

}  // namespace

void checkAcross(std::vector<Draft>& drafts, Diagnostics& diags, std::string_view stateDir) {
  IdIndex ids;
  std::map<std::string, const Draft*> paths, services;
  for (const Draft& d : drafts) {
    const Resource& r = d.resource;
    if (auto [it, fresh] = ids.emplace(r.id, &d); !fresh)
      diags.error(r.pos, fmt::format("duplicate id '{}': {} here and {} at {}; ids are "
                                     "<module>.<name> across all kinds, so rename one",
                                     r.id, d.subject(), it->second->subject(),
                                     it->second->resource.pos.str()));
    if (!r.path().empty()) {
      if (auto [it, fresh] = paths.emplace(r.path(), &d); !fresh)
        diags.error(d.pathPos, fmt::format("duplicate path '{}': {} and {} (at {}) both manage "
                                           "it; keep one of them",
                                           shown(r.path()), d.subject(), it->second->subject(),
                                           it->second->pathPos.str()));
    }
    if (std::holds_alternative<ServiceSpec>(r.spec) && !r.service()->empty()) {
      if (auto [it, fresh] = services.emplace(*r.service(), &d); !fresh)
        diags.error(d.servicePos,
                    fmt::format("duplicate service '{}': {} and {} (at {}) both drive it; keep "
                                "one of them",
                                *r.service(), d.subject(), it->second->subject(),
                                it->second->servicePos.str()));
    }
    if (const auto* process = std::get_if<ProcessSpec>(&r.spec)) {
      if (auto [it, fresh] = services.emplace(process->service, &d); !fresh)
        diags.error(d.servicePos,
                    fmt::format("duplicate service '{}': {} and {} (at {}) both run as it; give "
                                "one of them its own service = \"<name>.service\"",
                                process->service, d.subject(), it->second->subject(),
                                it->second->servicePos.str()));
    }
  }
  checkNesting(drafts, diags);
  checkStateDir(drafts, stateDir, diags);
  for (Draft& d : drafts) {
    d.resource.requires_ = resolve(d.requires_, "requires", d, ids, diags);
    d.resource.restartOn = resolve(d.restartOn, "restart-on", d, ids, diags);
    d.resource.reloadOn = resolve(d.reloadOn, "reload-on", d, ids, diags);
    // One change cannot both restart and reload the same process: say which.
    for (const Ref& ref : d.reloadOn)
      if (std::find(d.resource.restartOn.begin(), d.resource.restartOn.end(), ref.id) !=
          d.resource.restartOn.end())
        diags.error(ref.pos, fmt::format("{} lists '{}' in both restart-on and reload-on; keep it "
                                         "in one (restart-on restarts the service, reload-on "
                                         "reloads it)",
                                         d.subject(), shown(ref.id)));
  }
}

}  // namespace mesh::decl
