#include "decl/accounts.hh"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "decl/fields.hh"

namespace mesh::decl {

namespace {

// `name`: required, an account name as useradd takes it.
std::string readAccountName(Fields& f, std::string_view what, std::string_view example) {
  const toml::node* n = f.find("name");
  if (!n) {
    f.missing("name", example);
    return {};
  }
  auto v = f.string("name");
  if (!v) return {};
  if (!validPrincipalName(*v)) {
    f.error(f.at(*n), fmt::format("name '{}' in {} is not a valid {} name; use lowercase letters, "
                                  "digits, '_', '-' and '.', starting with a letter or '_' (at "
                                  "most 32 characters)",
                                  shown(*v), f.subject(), what));
    return {};
  }
  return *v;
}

// `uid`/`gid`: an integer id, neither root's 0 nor the (uid_t)-1 and 65535
// that mean "none".
std::optional<uint32_t> readId(Fields& f, std::string_view key) {
  const toml::node* n = f.find(key);
  if (!n) return std::nullopt;
  const auto* i = n->as_integer();
  if (!i) {
    f.error(f.at(*n), fmt::format("{} in {} must be an integer, not {}; e.g. {} = 990", key,
                                  f.subject(), typeName(n->type()), key));
    return std::nullopt;
  }
  const int64_t v = i->get();
  if (v <= 0 || v >= 4294967295 || v == 65535) {
    f.error(f.at(*n), fmt::format("{} {} in {} is out of range; use 1 to 4294967294 (not 65535)",
                                  key, v, f.subject()));
    return std::nullopt;
  }
  return static_cast<uint32_t>(v);
}

// `groups`: an array of group names (each checked like any group a resource names).
std::vector<std::string> readGroups(Fields& f, Draft& d) {
  const toml::node* n = f.find("groups");
  if (!n) return {};
  const auto* a = n->as_array();
  if (!a) {
    f.error(f.at(*n), fmt::format("groups in {} must be an array of group names, not {}; e.g. "
                                  "groups = [\"ssl-cert\"]",
                                  f.subject(), typeName(n->type())));
    return {};
  }
  std::vector<std::string> out;
  for (const auto& e : *a) {
    const auto* s = e.as_string();
    if (!s || !validPrincipalName(s->get())) {
      f.error(f.at(e), fmt::format("groups in {} holds {}; each must be a group name of "
                                   "lowercase letters, digits, '_', '-' and '.'",
                                   f.subject(),
                                   s ? fmt::format("'{}'", shown(s->get())) : typeName(e.type())));
      continue;
    }
    d.accounts.push_back(AccountRef{s->get(), true, f.at(e), "groups"});
    out.push_back(s->get());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool isNumeric(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

UserSpec readUser(Fields& f, Draft& d, const ParseOptions& options) {
  f.rejectUnknown({"name", "uid", "group", "groups", "home", "shell", "system", "requires"},
                  {"restart-on", "reload-on"});
  UserSpec s;
  s.name = readAccountName(f, "user", "name = \"app\"");
  s.uid = readId(f, "uid");
  s.group = f.principal("group", PrincipalKind::Group, options);
  s.groups = readGroups(f, d);
  if (auto home = f.path("home")) s.home = *home;
  if (auto shell = f.path("shell")) s.shell = *shell;
  if (auto system = f.boolean("system")) s.system = *system;
  return s;
}

GroupSpec readGroup(Fields& f, Draft&, const ParseOptions&) {
  f.rejectUnknown({"name", "gid", "system", "requires"}, {"restart-on", "reload-on"});
  GroupSpec s;
  s.name = readAccountName(f, "group", "name = \"app\"");
  s.gid = readId(f, "gid");
  if (auto system = f.boolean("system")) s.system = *system;
  return s;
}

DeclaredAccounts declaredAccounts(const std::vector<Resource>& resources) {
  DeclaredAccounts out;
  for (const auto& r : resources) {
    if (const auto* u = std::get_if<UserSpec>(&r.spec)) {
      out.users.insert(u->name);
      if (!u->group) out.groups.insert(u->name);
    } else if (const auto* g = std::get_if<GroupSpec>(&r.spec)) {
      out.groups.insert(g->name);
    }
  }
  return out;
}

void checkAccounts(Drafts& drafts, Diagnostics& diags, const ParseOptions& options) {
  // name -> the id of the resource that declares it (the first, when twice).
  std::map<std::string, std::string> users, groups, ownGroups;
  for (const Resource& r : drafts.resources) {
    const std::string* name = nullptr;
    std::map<std::string, std::string>* into = nullptr;
    if (const auto* u = std::get_if<UserSpec>(&r.spec)) {
      name = &u->name, into = &users;
      if (!u->group && !u->name.empty()) ownGroups.emplace(u->name, r.id);
    } else if (const auto* g = std::get_if<GroupSpec>(&r.spec)) {
      name = &g->name, into = &groups;
    }
    if (!name || name->empty()) continue;
    auto [it, fresh] = into->emplace(*name, r.id);
    if (!fresh)
      diags.error(r.pos, fmt::format("{} '{}' is declared twice: by {} and by {}; keep one",
                                     kindName(r.kind), *name, it->second, r.id));
  }
  // A user without a `group` brings a group of its name, unless one is declared.
  for (const auto& [name, id] : ownGroups) groups.emplace(name, id);

  for (size_t i = 0; i < drafts.size(); ++i) {
    const Resource& r = drafts.resources[i];
    DraftSide& d = drafts.sides[i];
    auto require = [&](const std::string& id, const Position& pos) {
      if (id == r.id) return false;
      if (std::none_of(d.requires_.begin(), d.requires_.end(),
                       [&](const Ref& ref) { return ref.id == id; }))
        d.requires_.push_back(Ref{id, pos});
      return true;
    };
    for (const auto& ref : d.accounts) {
      const auto& declared = ref.group ? groups : users;
      if (auto it = declared.find(ref.name); it != declared.end() && require(it->second, ref.pos))
        continue;
      const auto& exists = ref.group ? options.groupExists : options.userExists;
      if (!exists || exists(ref.name)) continue;
      const char* what = ref.group ? "group" : "user";
      diags.error(ref.pos, fmt::format("no {} '{}' on this node ({} of {}); declare it "
                                       "([module.<module>.{}.<name>] name = \"{}\"), create it "
                                       "first or write a numeric id",
                                       what, ref.name, ref.key, subjectOf(r), what, ref.name));
    }
    // A process running as a declared account starts after it exists. Any other
    // User=/Group= is the supervisor's to resolve, as before.
    if (const auto* p = std::get_if<ProcessSpec>(&r.spec)) {
      for (const auto& [key, declared] : {std::pair{"User", &users}, std::pair{"Group", &groups}}) {
        auto u = p->unit.find(key);
        if (u == p->unit.end() || u->second.size() != 1 || isNumeric(u->second[0])) continue;
        if (auto it = declared->find(u->second[0]); it != declared->end())
          require(it->second, r.pos);
      }
    }
  }
}

}  // namespace mesh::decl
