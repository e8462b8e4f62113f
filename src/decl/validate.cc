#include "decl/validate.hh"

#include <fmt/format.h>

#include <map>

#include "decl/fields.hh"

namespace mesh::decl {

namespace {

using IdIndex = std::map<std::string, const Draft*>;

// What to tell someone who wrote an id that is not declared.
std::string unknownIdHint(const std::string& id, const Draft& from, const IdIndex& ids) {
  auto dot = id.find('.');
  if (dot == std::string::npos) {
    std::string local = from.resource.module + "." + id;
    if (ids.count(local)) return fmt::format("ids are <module>.<name>: did you mean '{}'?", local);
    return "ids are written <module>.<name>";
  }
  std::string module = id.substr(0, dot);  // shown() below: it may hold anything
  std::vector<std::string> inModule, modules;
  for (const auto& [known, draft] : ids) {
    if (draft->resource.module == module) inModule.push_back(known);
    if (modules.empty() || modules.back() != draft->resource.module)
      modules.push_back(draft->resource.module);
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

}  // namespace

void checkAcross(std::vector<Draft>& drafts, Diagnostics& diags) {
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
    if (const auto* process = std::get_if<ProcessSpec>(&r.spec)) {
      if (auto [it, fresh] = services.emplace(process->service, &d); !fresh)
        diags.error(d.servicePos,
                    fmt::format("duplicate service '{}': {} and {} (at {}) both run as it; give "
                                "one of them its own service = \"<name>.service\"",
                                process->service, d.subject(), it->second->subject(),
                                it->second->servicePos.str()));
    }
  }
  for (Draft& d : drafts) {
    d.resource.requires_ = resolve(d.requires_, "requires", d, ids, diags);
    d.resource.restartOn = resolve(d.restartOn, "restart-on", d, ids, diags);
  }
}

}  // namespace mesh::decl
