// `user`: a system account, made and kept with the distribution's own tools
// (apply/kinds/account_tools.hh). No password (useradd leaves it locked), the
// shell nologin unless declared, a home only when declared (made then, from
// /etc/skel). Observed in <root>/etc/passwd and <root>/etc/group; as declared,
// nothing is run. Drift in uid, primary group, supplementary groups (when
// declared: exactly those), home or shell is repaired with usermod.
//
// Ownership: the record says whether mesh-host created the account. Undeclared,
// an account it created is deleted with userdel — never its home or its files;
// one it found (adopted) is left as it is (`released`).
#include <fmt/format.h>

#include <algorithm>

#include "apply/applier.hh"
#include "apply/kinds/account_tools.hh"
#include "util/accounts.hh"
#include "util/error.hh"

namespace mesh::apply {

namespace {

constexpr const char* kNoHome = "/nonexistent";

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The supplementary groups `name` is listed in, sorted.
std::vector<std::string> memberOf(const std::string& root, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& g : readGroups(root))
    if (std::find(g.members.begin(), g.members.end(), name) != g.members.end())
      out.push_back(g.name);
  std::sort(out.begin(), out.end());
  return out;
}

class UserApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    const auto& s = std::get<decl::UserSpec>(r.spec);
    WantBuilder w("user/1");
    w.add("name", s.name)
        .add("uid", s.uid ? std::to_string(*s.uid) : "")
        .add("group", s.group ? s.group->name : "")
        .add("groups", joined(s.groups))
        .add("home", s.home.value_or(""))
        .add("shell", s.shell)
        .add("system", s.system ? "true" : "false");
    return w.finish();
  }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest&,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::UserSpec>(r.spec);
    const std::string& root = ctx.settings().root;
    const bool plan = ctx.planning();
    const auto prev = rec ? AccountObserved::parse(rec->observed) : AccountObserved{};
    AccountObserved now{s.name, prev.name == s.name && prev.created};

    const auto found = readUser(root, s.name);
    if (!found) {
      std::vector<std::string> args;
      if (s.system) args.push_back("--system");
      if (s.uid) args.insert(args.end(), {"--uid", std::to_string(*s.uid)});
      if (s.group)
        args.insert(args.end(), {"--gid", s.group->name});
      else
        args.push_back("--user-group");
      if (!s.groups.empty()) args.insert(args.end(), {"--groups", joined(s.groups)});
      if (s.home)
        args.insert(args.end(), {"--home-dir", *s.home, "--create-home"});
      else
        args.insert(args.end(), {"--home-dir", kNoHome, "--no-create-home"});
      args.insert(args.end(), {"--shell", s.shell, "--no-log-init", s.name});
      now.created = true;
      step.change([&] {
        step.claimInstall(now.str());
        runAccountTool(ctx, "useradd", args);
      });
      if (plan) ctx.planAccount(false, s.name);
      if (plan && !s.group) ctx.planAccount(true, s.name);
      std::string detail = fmt::format("{} user {}", plan ? "would create" : "created", s.name);
      if (!plan)
        if (auto made = readUser(root, s.name)) detail += fmt::format(" (uid {})", made->uid);
      Decision o = Decision::act(false, "", detail);
      o.observed = now.str();
      return o;
    }

    std::vector<std::string> drift, args;
    if (s.uid && found->uid != *s.uid) {
      drift.push_back(fmt::format("uid {}, want {}", found->uid, *s.uid));
      args.insert(args.end(), {"--uid", std::to_string(*s.uid)});
    }
    if (s.group) {
      const auto gid = ctx.accounts().gid(s.group->name);
      if (!gid && !(plan && ctx.accountPlanned(true, s.group->name)))
        throw Error("no group '{}' on this node (group of user {})", s.group->name, s.name);
      if (!gid || found->gid != *gid) {
        drift.push_back(fmt::format("group {}, want {}", found->gid, s.group->name));
        args.insert(args.end(), {"--gid", s.group->name});
      }
    }
    if (!s.groups.empty()) {
      const auto has = memberOf(root, s.name);
      if (has != s.groups) {
        drift.push_back(fmt::format("groups {}, want {}", has.empty() ? "none" : joined(has),
                                    joined(s.groups)));
        args.insert(args.end(), {"--groups", joined(s.groups)});
      }
    }
    if (s.home && found->home != *s.home) {
      drift.push_back(fmt::format("home {}, want {}", found->home, *s.home));
      args.insert(args.end(), {"--home", *s.home});
    }
    if (found->shell != s.shell) {
      drift.push_back(fmt::format("shell {}, want {}", found->shell, s.shell));
      args.insert(args.end(), {"--shell", s.shell});
    }
    if (drift.empty()) {
      Decision o = Decision::unchanged();
      o.observed = now.str();
      return o;
    }
    args.push_back(s.name);
    step.change([&] { runAccountTool(ctx, "usermod", args); });
    std::string what;
    for (const auto& d : drift) what += (what.empty() ? "" : ", ") + d;
    Decision o = Decision::act(
        true, what, fmt::format("{} user {}", plan ? "would change" : "changed", s.name));
    o.observed = now.str();
    return o;
  }

  bool ownsInstalled(const state::Record& rec) const override {
    return AccountObserved::parse(rec.observed).created;
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    const auto prev = AccountObserved::parse(rec.observed);
    const bool exists =
        !prev.name.empty() && readUser(step.ctx().settings().root, prev.name).has_value();
    return removeAccount(step, rec, "user", "userdel", exists, "its home and files are");
  }
};

}  // namespace

const Applier& userApplier() {
  static const UserApplier a;
  return a;
}

}  // namespace mesh::apply
