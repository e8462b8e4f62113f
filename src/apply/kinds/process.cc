// `process`: a long-running service — a bundle unpacked under
// <state-dir>/bundles/<hex> and a unit rendered from the `unit` table. As wanted
// when the installed unit text equals the rendered one, the bundle is intact and
// the service runs; then nothing is called at all. Otherwise the unit and bundle
// are put in place here, and the start or restart is left to the end of the
// cycle (Decision::activation), after every other resource and one reload at most.
#include <nlohmann/json.hpp>

#include <string_view>

#include "apply/applier.hh"
#include "apply/diff.hh"
#include "apply/kinds/cause_text.hh"
#include "apply/kinds/tree.hh"
#include "apply/kinds/unit_text.hh"
#include "apply/process_info.hh"
#include "util/error.hh"
#include "util/faults.hh"
#include "util/fs.hh"
#include "util/state_layout.hh"
#include "util/text_safe.hh"

namespace mesh::apply {

namespace {

using json = nlohmann::json;

// What the record remembers: the bundle tree, the service name (to stop it once
// no longer declared), how often mesh-host restarted it, and how often its
// supervisor did (Restart=) before the last start or restart mesh-host made —
// the supervisor's own count starts again then.
struct ProcessObserved {
  TreeObserved tree;
  std::string service;
  int64_t restarts = 0;
  int64_t crashRestarts = 0;
  // The digest of the unit text mesh-host installed ("" not known: a record from
  // before it was kept). A unit file that still has it is mesh-host's own, untouched.
  std::string unit;
  // mesh-host installed the service's unit (or was about to): recorded, synced,
  // before the unit or its bundle is first written (Step::claimInstall), so a
  // service whose first start failed, or whose cycle was cut short, is still
  // mesh-host's to stop and remove once no longer declared. False for one only
  // ever adopted as found (a lost store): that is released, not removed.
  bool installed = false;

  std::string str() const {
    json j{{"tree", tree.str()}, {"service", service}, {"restarts", restarts}};
    if (crashRestarts != 0) j["crash_restarts"] = crashRestarts;
    if (!unit.empty()) j["unit"] = unit;
    if (installed) j["installed"] = true;
    return jsonData(j);
  }
  static ProcessObserved parse(const std::string& text) {
    ProcessObserved o;
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return o;
    o.tree = TreeObserved::parse(j.value("tree", ""));
    o.service = j.value("service", "");
    o.restarts = j.value("restarts", int64_t{0});
    o.crashRestarts = j.value("crash_restarts", int64_t{0});
    o.unit = j.value("unit", "");
    o.installed = j.value("installed", false);
    return o;
  }
};

// <state-dir>/bundles, opened beneath the state dir without following a link: a
// link planted there (or the state dir's own path aside) is refused, not followed.
// nullopt when missing; a plan on a node never applied to has no state dir yet.
std::optional<Fd> openBundles(Context& ctx) {
  if (ctx.planning() && !lstatPath(ctx.settings().stateDir)) return std::nullopt;
  return ctx.stateDirBeneath().openDir(layout::kBundles);
}

class ProcessApplier : public Applier {
 public:
  Digest want(Context& ctx, const decl::Resource& r) const override {
    const auto& s = std::get<decl::ProcessSpec>(r.spec);
    // What is declared, not how this mesh-host renders it: an upgrade whose unit files
    // read differently changes no want, and so restarts nothing (reconcile rewrites the
    // file and reloads the supervisor). Where the bundle lives and --root are in it:
    // they change the paths the service runs.
    WantBuilder w("process/2");
    w.add("bundle", s.bundle)
        .add("service", s.service)
        .add("dir", ctx.bundleDir(s.bundle))
        .add("root", ctx.settings().root);
    for (const auto& [key, values] : s.unit)
      for (const auto& v : values) w.add("unit." + key, v);
    return w.finish();
  }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest& want,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::ProcessSpec>(r.spec);
    const std::string bundleDir = ctx.bundleDir(s.bundle);
    const auto unit = renderUnit(r.id, s, bundleDir, ctx.settings().root);
    const auto& svc = ctx.service(s.service);
    const auto prev = rec ? ProcessObserved::parse(rec->observed) : ProcessObserved{};
    bundle::Limits limits;   // no keep-modes: group and world write always dropped
    limits.rootMode = 0700;  // its User= gets in by an ACL (apply/bundle_access.hh)
    auto bundles = openBundles(ctx);
    const std::string hex = s.bundle.hex();

    // Observe: the bundle tree, the installed unit, the running service.
    ProcessObserved now{{},
                        s.service,
                        prev.restarts,
                        prev.crashRestarts,
                        Digest::ofBytes(unit.text).str(),
                        prev.installed && prev.service == s.service};
    const TreeObserved trusted = rec && rec->wrote == want.str() ? prev.tree : TreeObserved{};
    auto [bundleDrift, nowTree, sameTree] = checkTree(
        ctx, {bundles ? FdRef(*bundles) : FdRef(), hex, bundleDir}, s.bundle, limits, trusted);
    now.tree = std::move(nowTree);
    std::optional<std::string> unitDrift;
    // The unit file is still what mesh-host installed for this very want, but it renders
    // differently now (a mesh-host upgrade): rewritten, the supervisor reloaded, nothing
    // restarted — the service runs what was declared either way.
    bool rerendered = false;
    if (!svc.installed)
      unitDrift = "not installed";
    else if (svc.installedText != unit.text && rec && rec->wrote == want.str() &&
             !prev.unit.empty() && Digest::ofBytes(svc.installedText).str() == prev.unit)
      rerendered = true;
    else if (svc.installedText != unit.text)
      unitDrift = svc.unitEdit.empty() ? "unit edited" : "unit edited (" + svc.unitEdit + ")";
    const auto& causes = step.causes();

    std::string warning;
    if (auto keys = ctx.supervisor().unsupportedKeys(unit); !keys.empty()) {
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
      warning = fmt::format("the {} supervisor cannot honour {}", ctx.supervisor().name(), list);
    }

    // A crash loop its supervisor handles (waiting for Restart=, or systemd's start
    // limit hit): failing, and not started — starting it would override the
    // supervisor's backoff. Only a cause (a changed unit or bundle, restart-on, an
    // owed restart) starts it; a real stop (inactive) is started below.
    if (!bundleDrift && !unitDrift && svc.held && !causes.restarts())
      throw Error("{} is not running: {} ({}); left to its supervisor, not started", s.service,
                  svc.heldWhy, svc.activeState);

    if (!bundleDrift && !unitDrift && svc.active && causes.empty()) {
      if (rerendered) {
        ctx.changeOwingNothing([&] { ctx.supervisor().install(unit); });
        Decision o =
            Decision::updated("unit rendering changed (mesh-host upgraded)",
                              fmt::format("{} {}, not restarted",
                                          ctx.planning() ? "would rewrite" : "rewrote", s.service));
        o.observed = now.str();
        o.restartsDependents = false;  // what it runs is as it was
        if (ctx.planning()) o.diff = unifiedDiff(svc.installedText, unit.text, s.service);
        return o;
      }
      if (!svc.enabled) {
        // Disabled by hand: enable it again (so it survives a reboot); the
        // running service has no cause to restart.
        step.change([&] { ctx.supervisor().install(unit); });
        Decision o = Decision::updated("drift: not enabled",
                                       (ctx.planning() ? "would enable " : "enabled ") + s.service);
        o.observed = now.str();
        return o;
      }
      Decision o = Decision::unchanged();
      o.observed = now.str();
      o.warning = warning;
      return o;
    }

    // Decide: what to put in place, and whether to start or restart.
    std::optional<std::string> drift;  // what the cycle words the reason for
    if (bundleDrift || unitDrift)
      drift = unitDrift && svc.installed ? *unitDrift : "bundle " + bundleDrift.value_or("intact");
    // Only reload-on causes, nothing else to do: the running service is reloaded in
    // place (its pid stays). Anything that restarts it wins and pays the reloads too.
    const bool reload =
        svc.active && !bundleDrift && !unitDrift && !causes.restarts() && causes.reloads();
    const bool restart = svc.active && !reload;

    // Act: the bundle and the unit now; the start or restart at the end of the cycle.
    // A running service whose unit or bundle is replaced is owed a restart,
    // persisted before anything changes so that a crash cannot lose it.
    if ((unitDrift || bundleDrift) && svc.active) step.oweOwnRestart(r.id, want);
    // Owned from the moment it is installed: recorded before the first write.
    if ((unitDrift || bundleDrift) && !now.installed) {
      now.installed = true;
      step.change([&] { step.claimInstall(now.str()); });
    }
    if (bundleDrift) {
      const std::string blob = ctx.blobs().fetch(s.bundle);
      now.tree = {};
      step.change([&] {
        auto& state = ctx.stateDirBeneath();
        std::vector<std::string> created;
        Fd dir = bundles ? std::move(*bundles) : state.makeDirs(layout::kBundles, &created);
        try {
          now.tree.manifest = unpackAndSwitch(ctx, blob, {dir, hex, bundleDir}, limits);
        } catch (...) {
          state.removeCreated(created);
          throw;
        }
      });
      if (!now.tree.manifest) now.tree.manifest = bundle::readManifest(blob, limits);  // a plan
    }
    if (unitDrift) {
      step.change([&] {
        ctx.supervisor().install(unit);
        crashPoint(crash::kAfterUnitInstalled);
      });
    } else if (rerendered) {
      // Rendered anew by an upgraded mesh-host and acted on for another cause: the
      // file is rewritten all the same, or the next cycle would take it for edited.
      ctx.changeOwingNothing([&] { ctx.supervisor().install(unit); });
    }
    if (restart) now.restarts += 1;
    // The start or restart below begins the supervisor's count of Restart='s
    // restarts again: keep what it counted so far (one more call, only here).
    // A supervisor that cannot say loses that count; it never holds the restart up.
    if (svc.installed && ctx.applying() && !reload) {
      try {
        now.crashRestarts += ctx.supervisor().observe({s.service}, true)[s.service].crashRestarts;
      } catch (const Error&) {
      }
    }

    std::string detail;
    if (reload)
      detail = fmt::format("{} {}", ctx.planning() ? "would reload" : "reloaded", s.service);
    else if (!svc.installed)
      detail = fmt::format("{} file(s), running as {}",
                           now.tree.manifest ? now.tree.manifest->files() : 0, s.service);
    else
      detail = fmt::format("{} {}",
                           ctx.planning() ? (restart ? "would restart" : "would start")
                                          : (restart ? "restarted" : "started"),
                           s.service);
    // Installed when nothing drifts: it is started, or restarted on its causes.
    Decision o = drift ? Decision::act(svc.installed, *drift, detail)
                       : Decision::updated(svc.active ? "" : "drift: not running", detail);
    // A service being started anew needs no cause; a restart or reload names its causes.
    if (svc.active && !causes.empty()) o.addReason(causeText(r.id, causes));
    o.observed = now.str();
    o.warning = warning;
    // A plan shows what the unit file becomes.
    if (ctx.planning() && unitDrift)
      o.diff = unifiedDiff(
          svc.installed ? std::optional<std::string_view>(svc.installedText) : std::nullopt,
          unit.text, s.service);
    o.activation = reload ? Activation::Reload : restart ? Activation::Restart : Activation::Start;
    o.service = s.service;
    return o;
  }

  bool ownsInstalled(const state::Record& rec) const override {
    const auto o = ProcessObserved::parse(rec.observed);
    return o.installed && !o.service.empty();
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    Context& ctx = step.ctx();
    const auto prev = ProcessObserved::parse(rec.observed);
    if (prev.service.empty()) return Removal::released("no service recorded");
    const auto& svc = ctx.service(prev.service);
    step.change([&] {
      if (svc.active) ctx.supervisor().stop(prev.service);
      if (svc.installed) ctx.supervisor().uninstall(prev.service);
    });
    // A declared process that takes the name over later in this cycle finds it gone.
    if (ctx.planning()) ctx.planUninstalled(prev.service);
    return Removal::removed(fmt::format(
        "{} {}", ctx.planning() ? "would stop and remove" : "stopped and removed", prev.service));
  }
};

}  // namespace

std::optional<ProcessInfo> processInfo(const state::Record& rec) {
  if (rec.kind != "process") return std::nullopt;
  auto o = ProcessObserved::parse(rec.observed);
  if (o.service.empty()) return std::nullopt;
  return ProcessInfo{o.service, o.restarts, o.crashRestarts};
}

const Applier& processApplier() {
  static const ProcessApplier a;
  return a;
}

}  // namespace mesh::apply
