#include "apply/cycle/activator.hh"

#include <map>
#include <unordered_set>

#include "apply/bundle_access.hh"
#include "apply/restart_permit.hh"
#include "util/error.hh"
#include "util/faults.hh"

namespace mesh::apply::cycle {

// A restart under a rolling-restart slot is settled before the slot is freed.
void Activator::activate() {
  std::vector<size_t> settling;  // of pending_
  std::vector<std::string> names;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const auto& p = pending_[i];
    Outcome& o = settlement_.result(p.resultIndex).outcome;
    if (ctx_.applying() && o.verdict() != Verdict::Failed) {
      bool made = false;  // the start or restart was made
      try {
        store_->checkIntegrity();  // as before any change (a start is one)
        crashPoint(crash::kBeforeRestart);
        if (o.activation == Activation::Reload) {
          // In place: the service stays up, so no restart slot is taken.
          ctx_.supervisor().reloadService(o.service);
        } else if (o.activation == Activation::Restart && ctx_.holdRestartSlot) {
          // Freed when the restart is done and settled, or has thrown.
          RestartPermit permit = ctx_.holdRestartSlot(o.service);
          ctx_.supervisor().restart(o.service);
          made = true;
          auto failed = ctx_.supervisor().settle({o.service});
          if (auto f = failed.find(o.service); f != failed.end())
            throw Error("restart of {} failed: {}", o.service, f->second);
        } else {
          if (o.activation == Activation::Restart)
            ctx_.supervisor().restart(o.service);
          else
            ctx_.supervisor().start(o.service);
          made = true;
          settling.push_back(i);
          names.push_back(o.service);
        }
        crashPoint(crash::kAfterRestart);
        o.restarted = o.activation == Activation::Restart;
      } catch (const Error& e) {
        if (!settling.empty() && settling.back() == i) {
          settling.pop_back();
          names.pop_back();
        }
        failActivation(o, p, e.what(), made);
      }
      if (!settling.empty() && settling.back() == i) continue;  // recorded once settled
    }
    settlement_.record(p, o);
    settlement_.settle(p.resultIndex);
  }
  if (settling.empty()) return;
  std::map<std::string, std::string> failed;
  try {
    failed = ctx_.supervisor().settle(names);
  } catch (const Error& e) {
    for (const auto& n : names)
      failed[n] = fmt::format("cannot tell whether it stayed up: {}", e.what());
  }
  for (size_t i : settling) {
    const auto& p = pending_[i];
    Outcome& o = settlement_.result(p.resultIndex).outcome;
    if (auto f = failed.find(o.service); f != failed.end())
      failActivation(o, p,
                     fmt::format("{} of {} failed: {}",
                                 o.activation == Activation::Restart ? "restart" : "start",
                                 o.service, f->second),
                     true);
    settlement_.record(p, o);
    settlement_.settle(p.resultIndex);
  }
}

// When it cannot be given, the services that would start as a user do not: they
// could not read their bundle (those already running keep what they have).
void Activator::keepAccess(const decl::Declaration& d, CycleReport& report) {
  try {
    report.access = keepBundleAccess(ctx_, d);
  } catch (const Error& e) {
    report.accessError = fmt::format("cannot give service users their bundles: {}", e.what());
    std::unordered_set<std::string_view> asUsers;
    for (const auto& r : d.resources)
      if (r.kind == decl::Kind::Process && serviceUid(std::get<decl::ProcessSpec>(r.spec)))
        asUsers.insert(r.id);
    for (const auto& p : pending_)
      if (asUsers.count(p.id))
        failActivation(settlement_.result(p.resultIndex).outcome, p, report.accessError, false);
  }
}

// The start, restart or reload of `o` failed: it is `failed`, saying why, and
// keeps what the kind said besides — the warning (unit keys the backend cannot
// honour: often the very reason), what it installed (the record's observed), and,
// when the start or restart was made (`made`: the service did not stay up),
// that it was: the restarts it owed are paid.
void Activator::failActivation(Outcome& o, const Pending& p, const std::string& why, bool made) {
  Outcome failed = Outcome::failed(p.rec, why);
  failed.service = o.service;
  failed.warning = std::move(o.warning);
  failed.observed = std::move(o.observed);
  failed.activated = made && o.activation != Activation::Reload;
  failed.restarted = made && o.activation == Activation::Restart;
  o = std::move(failed);
}

}  // namespace mesh::apply::cycle
