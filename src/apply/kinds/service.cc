// `service`: a unit mesh-host did not install (the distro's nginx.service), on the
// systemd backend. mesh-host drives its state (running or stopped), its
// enablement (the links its [Install] section asks for) and a drop-in it owns
// (<unit-dir>/<unit>.d/50-mesh-host.conf); it never edits or removes the vendor's
// unit file. Restarts and reloads on `restart-on`/`reload-on` go through the
// cycle's ledger and activator, exactly as a process's do; a changed drop-in
// restarts a running service (owed before it is written, as a process's own unit).
//
// Ownership: before its first act, the record keeps the state mesh-host found the
// unit in (running? enabled?) — committed, so a crash cannot lose it. Once no
// longer declared, or when the resource names another unit, the drop-in is
// removed and the unit put back as it was found (give back, below).
// As declared: nothing is called but the reads (no job, no daemon-reload).
//
// Giving back a unit that runs on: its drop-in removed, systemd reloaded, the
// unit restarted, so that it runs as its vendor's unit says (Ansible's
// daemon_reload + restarted, Puppet's refresh of a running service). The restart
// is owed in the record (committed) before the drop-in goes, and paid only by a
// start after that: a kill between the two leaves it owed, never lost.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apply/applier.hh"
#include "apply/diff.hh"
#include "apply/kinds/cause_text.hh"
#include "apply/process_info.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/text_safe.hh"
#include "util/unit_keys.hh"

namespace mesh::apply {

namespace {

using json = nlohmann::json;

// What the record remembers: the unit, how mesh-host found it before it first
// acted, and whether it wrote (or was about to write) a drop-in.
struct ServiceObserved {
  std::string unit;
  bool found = false;  // the two below are known
  bool foundActive = false;
  bool foundEnabled = false;
  bool dropin = false;
  // mesh-host acted on it (or was about to): once no longer declared, it is put
  // back as found. Never set for a unit only ever found as declared: released.
  bool acted = false;
  int64_t restarts = 0;
  // What the declaration asks: "running", "stopped", or "" (as it is). For
  // `status`: a service not asked to run is not down when it does not.
  std::string wants;
  // A restart without the drop-in, owed since then (unix ms; 0: none): the
  // drop-in of a unit that runs on was (about to be) removed.
  int64_t restartOwedAt = 0;

  std::string str() const {
    json j{{"unit", unit}, {"restarts", restarts}};
    if (found) j["found"] = {{"active", foundActive}, {"enabled", foundEnabled}};
    if (dropin) j["dropin"] = true;
    if (acted) j["acted"] = true;
    if (!wants.empty()) j["wants"] = wants;
    if (restartOwedAt) j["restart_owed_at"] = restartOwedAt;
    return jsonData(j);
  }
  static ServiceObserved parse(const std::string& text) {
    ServiceObserved o;
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return o;
    o.unit = j.value("unit", "");
    o.restarts = j.value("restarts", int64_t{0});
    if (auto f = j.find("found"); f != j.end() && f->is_object()) {
      o.found = true;
      o.foundActive = f->value("active", false);
      o.foundEnabled = f->value("enabled", false);
    }
    o.dropin = j.value("dropin", false);
    o.acted = j.value("acted", false);
    o.wants = j.value("wants", "");
    o.restartOwedAt = j.value("restart_owed_at", int64_t{0});
    return o;
  }
};

// The drop-in's text: the declared keys in the sections systemd reads them from.
std::string renderDropin(const std::string& id,
                         const std::map<std::string, decl::UnitValue>& keys) {
  std::map<UnitSection, std::string> sections;
  for (const auto& [key, values] : keys) {
    const UnitKey* row = findUnitKey(key);
    auto& text = sections[row ? row->section : UnitSection::Service];
    for (const auto& v : values) text += fmt::format("{}={}\n", key, v);
  }
  std::string out =
      fmt::format("# Managed by mesh-host ({}); edits are drift and will be reverted.\n", id);
  for (const auto& [section, name] :
       {std::pair{UnitSection::Unit, "Unit"}, std::pair{UnitSection::Service, "Service"},
        std::pair{UnitSection::Install, "Install"}})
    if (auto it = sections.find(section); it != sections.end())
      out += fmt::format("\n[{}]\n{}", name, it->second);
  return out;
}

std::string dropinLabel(const std::string& unit) {
  return unit + ".d/" + supervise::kDropinName;
}

// The unit as systemd knows it; a unit it does not know, or masked, fails the resource.
supervise::ForeignUnit observeUnit(Context& ctx, const std::string& unit) {
  auto f = ctx.supervisor().observeForeign(unit);
  if (f.loadState == "not-found")
    throw Error(
        "{} is not on this node (systemd: not-found); install the package that ships it "
        "first — mesh-host drives a vendor's unit, it never writes one",
        unit);
  if (f.loadState == "masked")
    throw Error("{} is masked; unmask it (systemctl unmask {}) or leave it out of the declaration",
                unit, unit);
  return f;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// Started (or restarted) after `atMs`: a restart owed since then is paid.
bool startedSince(Context& ctx, const std::string& unit, int64_t atMs) {
  const auto st = ctx.supervisor().observe({unit}, /*detailed=*/true)[unit];
  return st.active && st.sinceUs / 1000 > atMs;
}

// What giving a unit back did, in the tense of the command; `gone` when the unit
// is no longer on the node (only its drop-in could go).
struct GivenBack {
  std::vector<std::string> did;
  bool gone = false;
};

// Puts `prev.unit` back as mesh-host found it: its drop-in removed, enabled (or
// not) and running (or stopped) as found. One that runs on is restarted without
// its drop-in — owed first, in the record (Step::claimInstall, committed), so
// that a kill after the drop-in went still restarts it, once: a start after the
// owed time pays it.
GivenBack giveBack(Step& step, const ServiceObserved& prev) {
  Context& ctx = step.ctx();
  const bool plan = ctx.planning();
  auto said = [plan](const char* would, const char* done, const std::string& what) {
    return fmt::format("{} {}", plan ? would : done, what);
  };
  GivenBack out;
  const auto f = ctx.supervisor().observeForeign(prev.unit);
  if (f.loadState == "not-found") {
    out.gone = true;
    if (f.dropin) {
      step.change([&] { ctx.supervisor().setDropin(prev.unit, std::nullopt); });
      out.did.push_back(said("would remove", "removed", dropinLabel(prev.unit)));
    }
    return out;
  }
  const auto& svc = ctx.service(prev.unit);
  const bool dropin = f.dropin.has_value();
  const bool wasActive = prev.found ? prev.foundActive : svc.active;
  const bool runsOn = wasActive && svc.active;
  const bool restart =
      runsOn &&
      (dropin || (prev.restartOwedAt && !startedSince(ctx, prev.unit, prev.restartOwedAt)));
  if (restart && dropin && !prev.restartOwedAt)
    step.change([&] {
      ServiceObserved owed = prev;
      owed.restartOwedAt = unixNowMs();
      step.claimInstall(owed.str());
    });
  if (dropin) {
    step.change([&] { ctx.supervisor().setDropin(prev.unit, std::nullopt); });
    out.did.push_back(said("would remove", "removed", dropinLabel(prev.unit)));
  }
  if (prev.found && !f.enableLinks.empty() && f.enabled != prev.foundEnabled) {
    step.change([&] { ctx.supervisor().setEnabled(prev.unit, f, prev.foundEnabled); });
    out.did.push_back(said(prev.foundEnabled ? "would enable" : "would disable",
                           prev.foundEnabled ? "enabled" : "disabled", prev.unit));
  }
  if (wasActive && !svc.active) {
    step.change([&] { ctx.supervisor().start(prev.unit); });
    out.did.push_back(said("would start", "started", prev.unit));
  } else if (!wasActive && svc.active) {
    step.change([&] { ctx.supervisor().stop(prev.unit); });
    out.did.push_back(said("would stop", "stopped", prev.unit));
  } else if (restart) {
    step.change([&] { ctx.supervisor().restart(prev.unit); });
    out.did.push_back(said("would restart", "restarted", prev.unit) + " without " +
                      (dropin ? "it" : "its drop-in"));
  } else if (dropin || prev.restartOwedAt) {
    // Nothing to run again (stopped, or restarted since): systemd still drops
    // the drop-in's settings now, not at its next reload.
    step.change([&] { ctx.supervisor().flush(); });
  }
  return out;
}

// The detail of a unit given back because the resource names another now.
std::string formerUnitDetail(const std::string& unit, const GivenBack& back) {
  return fmt::format("{} given back{}: {}", unit, back.gone ? " (gone from the node)" : "",
                     joined(back.did));
}

class ServiceApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    const auto& s = std::get<decl::ServiceSpec>(r.spec);
    WantBuilder w("service/1");
    w.add("unit", s.unit)
        .add("state", s.running ? (*s.running ? "running" : "stopped") : "")
        .add("enabled", s.enabled ? (*s.enabled ? "true" : "false") : "");
    for (const auto& [key, values] : s.dropin)
      for (const auto& v : values) w.add("dropin." + key, v);
    return w.finish();
  }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest& want,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::ServiceSpec>(r.spec);
    const bool plan = ctx.planning();

    // Observe: the unit, mesh-host's drop-in, its enable links, whether it runs.
    const auto f = observeUnit(ctx, s.unit);
    const auto& svc = ctx.service(s.unit);
    const auto prev = rec ? ServiceObserved::parse(rec->observed) : ServiceObserved{};
    // Another unit than the record's: that one is given back first, in this cycle.
    const bool renamed = !prev.unit.empty() && prev.unit != s.unit;
    GivenBack back;
    if (renamed && (prev.acted || prev.dropin)) back = giveBack(step, prev);
    ServiceObserved now = renamed ? ServiceObserved{} : prev;
    now.unit = s.unit;
    now.wants = s.running ? (*s.running ? "running" : "stopped") : "";
    now.restartOwedAt = 0;
    if (!now.found) {
      now.found = true;
      now.foundActive = svc.active;
      now.foundEnabled = f.enabled;
    }
    const std::optional<std::string> dropin =
        s.dropin.empty() ? std::nullopt : std::optional(renderDropin(r.id, s.dropin));
    const auto& causes = step.causes();

    // Decide.
    const bool dropinDrift = f.dropin != dropin;
    if (s.enabled && *s.enabled && f.enableLinks.empty())
      throw Error(
          "{} has no [Install] section (a static unit): it cannot be enabled; leave "
          "'enabled' out",
          s.unit);
    const bool enableDrift = s.enabled && *s.enabled != f.enabled;
    // Unset: as it is — a running service restarts on its causes, a stopped one stays.
    const bool wantRunning = s.running.value_or(svc.active);
    // Given back with a restart owed (a kill before it), then declared again.
    const bool owedBack = !renamed && prev.restartOwedAt && svc.active &&
                          !startedSince(ctx, s.unit, prev.restartOwedAt);
    const bool restartOwed = causes.restarts() || (dropinDrift && svc.active) || owedBack;
    if (wantRunning && svc.held && !restartOwed)
      throw Error("{} is not running: {} ({}); left to its supervisor, not started", s.unit,
                  svc.heldWhy, svc.activeState);
    Activation activation = Activation::None;
    if (wantRunning && !svc.active)
      activation = Activation::Start;
    else if (wantRunning && restartOwed)
      activation = Activation::Restart;
    else if (wantRunning && causes.reloads())
      activation = Activation::Reload;
    const bool stop = !wantRunning && svc.active;

    if (!dropinDrift && !enableDrift && activation == Activation::None && !stop) {
      Decision o = back.did.empty()
                       ? Decision::unchanged()
                       : Decision::updated("declared", formerUnitDetail(prev.unit, back));
      if (!back.did.empty()) o.addReason(fmt::format("unit was {}", prev.unit));
      o.observed = now.str();
      return o;
    }

    // Act. What was found, and that a drop-in is about to be written, is recorded
    // (committed) before the first change; a restart the new drop-in owes, before
    // it is written.
    if (!prev.acted || renamed || (dropin && !prev.dropin)) {
      now.acted = true;
      now.dropin = now.dropin || dropin.has_value();
      step.change([&] { step.claimInstall(now.str()); });
    }
    std::vector<std::string> did, drift;
    auto said = [plan](const char* would, const char* done, const std::string& what) {
      return fmt::format("{} {}", plan ? would : done, what);
    };
    if (dropinDrift) {
      if (svc.active && wantRunning) step.oweOwnRestart(r.id, want);
      step.change([&] { ctx.supervisor().setDropin(s.unit, dropin); });
      did.push_back(said(dropin ? "would write" : "would remove", dropin ? "wrote" : "removed",
                         dropinLabel(s.unit)));
      drift.push_back(!f.dropin ? "no drop-in" : dropin ? "drop-in edited" : "a drop-in");
      if (!dropin) now.dropin = false;
    }
    if (enableDrift) {
      step.change([&] { ctx.supervisor().setEnabled(s.unit, f, *s.enabled); });
      did.push_back(said(*s.enabled ? "would enable" : "would disable",
                         *s.enabled ? "enabled" : "disabled", s.unit));
      drift.push_back(*s.enabled ? "not enabled" : "enabled");
    }
    if (stop) {
      step.change([&] { ctx.supervisor().stop(s.unit); });
      did.push_back(said("would stop", "stopped", s.unit));
      drift.push_back("running");
    }
    if (activation == Activation::Start) {
      did.push_back(said("would start", "started", s.unit));
      drift.push_back("not running");
    } else if (activation == Activation::Restart) {
      did.push_back(said("would restart", "restarted", s.unit));
      now.restarts += 1;
    } else if (activation == Activation::Reload) {
      did.push_back(said("would reload", "reloaded", s.unit));
    }

    std::string detail = joined(did);
    const std::string driftWords = joined(drift);
    if (!back.did.empty()) detail += "; " + formerUnitDetail(prev.unit, back);
    Decision o = driftWords.empty() ? Decision::updated("", detail)
                                    : Decision::act(true, driftWords, detail);
    std::vector<std::string> more;
    if (renamed) more.push_back(fmt::format("unit was {}", prev.unit));
    if (svc.active && !causes.empty() && activation != Activation::Start)
      more.push_back(causeText(r.id, causes));
    if (!more.empty()) {
      std::string text;
      for (const auto& m : more) text += (text.empty() ? "" : "; ") + m;
      o.addReason(text);
    }
    if (plan && dropinDrift)
      o.diff = unifiedDiff(f.dropin ? std::optional<std::string_view>(*f.dropin) : std::nullopt,
                           dropin.value_or(""), dropinLabel(s.unit));
    o.observed = now.str();
    o.activation = activation;
    o.service = s.unit;
    return o;
  }

  bool ownsInstalled(const state::Record& rec) const override {
    const auto o = ServiceObserved::parse(rec.observed);
    return o.dropin || o.acted;
  }

  // Given back as found (giveBack): its drop-in removed; the unit put back running
  // (or stopped) and enabled (or not) as mesh-host found it, restarted when it
  // runs on without its drop-in.
  Removal remove(Step& step, const state::Record& rec) const override {
    const auto prev = ServiceObserved::parse(rec.observed);
    if (prev.unit.empty()) return Removal::released("no unit recorded");
    const auto back = giveBack(step, prev);
    if (back.gone) return Removal::released(prev.unit + " is gone from the node");
    if (back.did.empty()) return Removal::released(fmt::format("left {} as found", prev.unit));
    return Removal::removed(joined(back.did) + " (as mesh-host found it)");
  }
};

}  // namespace

std::optional<ProcessInfo> serviceInfo(const state::Record& rec) {
  if (rec.kind != "service") return std::nullopt;
  const auto o = ServiceObserved::parse(rec.observed);
  if (o.unit.empty()) return std::nullopt;
  ProcessInfo info{o.unit, o.restarts, 0};
  info.mustRun = o.wants == "running";
  return info;
}

const Applier& serviceApplier() {
  static const ServiceApplier a;
  return a;
}

}  // namespace mesh::apply
