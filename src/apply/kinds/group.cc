// `group`: a system group, made and kept with groupadd/groupmod/groupdel
// (apply/kinds/account_tools.hh). Observed in <root>/etc/group; as declared,
// nothing is run; a changed gid is drift, repaired with groupmod. Undeclared,
// a group mesh-host created is deleted (groupdel: refused while it is some
// user's primary group — the resource then fails and is tried again); one it
// found is left in place (`released`).
#include <fmt/format.h>

#include "apply/applier.hh"
#include "apply/kinds/account_tools.hh"
#include "util/accounts.hh"
#include "util/error.hh"

namespace mesh::apply {

namespace {

class GroupApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    const auto& s = std::get<decl::GroupSpec>(r.spec);
    WantBuilder w("group/1");
    w.add("name", s.name)
        .add("gid", s.gid ? std::to_string(*s.gid) : "")
        .add("system", s.system ? "true" : "false");
    return w.finish();
  }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest&,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::GroupSpec>(r.spec);
    const bool plan = ctx.planning();
    const auto prev = rec ? AccountObserved::parse(rec->observed) : AccountObserved{};
    AccountObserved now{s.name, prev.name == s.name && prev.created};

    const auto found = readGroup(ctx.settings().root, s.name);
    if (!found) {
      std::vector<std::string> args;
      if (s.system) args.push_back("--system");
      if (s.gid) args.insert(args.end(), {"--gid", std::to_string(*s.gid)});
      args.push_back(s.name);
      now.created = true;
      step.change([&] {
        step.claimInstall(now.str());
        runAccountTool(ctx, "groupadd", args);
      });
      if (plan) ctx.planAccount(true, s.name);
      std::string detail = fmt::format("{} group {}", plan ? "would create" : "created", s.name);
      if (!plan)
        if (auto made = readGroup(ctx.settings().root, s.name))
          detail += fmt::format(" (gid {})", made->gid);
      Decision o = Decision::act(false, "", detail);
      o.observed = now.str();
      return o;
    }
    if (s.gid && found->gid != *s.gid) {
      step.change([&] {
        runAccountTool(ctx, "groupmod", {"--gid", std::to_string(*s.gid), s.name});
      });
      Decision o =
          Decision::act(true, fmt::format("gid {}, want {}", found->gid, *s.gid),
                        fmt::format("{} group {}", plan ? "would change" : "changed", s.name));
      o.observed = now.str();
      return o;
    }
    Decision o = Decision::unchanged();
    o.observed = now.str();
    return o;
  }

  bool ownsInstalled(const state::Record& rec) const override {
    return AccountObserved::parse(rec.observed).created;
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    const auto prev = AccountObserved::parse(rec.observed);
    const bool exists =
        !prev.name.empty() && readGroup(step.ctx().settings().root, prev.name).has_value();
    return removeAccount(step, rec, "group", "groupdel", exists, "files it owns are");
  }
};

}  // namespace

const Applier& groupApplier() {
  static const GroupApplier a;
  return a;
}

}  // namespace mesh::apply
