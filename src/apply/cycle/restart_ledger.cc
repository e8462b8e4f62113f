#include "apply/cycle/restart_ledger.hh"

#include <algorithm>
#include <tuple>

#include "apply/cycle.hh"
#include "util/clock.hh"

namespace mesh::apply::cycle {

void RestartLedger::load() {
  for (auto& o : store_->owedRestarts()) owed_[o.process].push_back(o);
}

void RestartLedger::prepare() {
  for (const auto& r : decl_.resources) {
    for (const auto& cause : r.restartOn) dependents_[cause].push_back({r.id, false});
    for (const auto& cause : r.reloadOn) dependents_[cause].push_back({r.id, true});
    if (const auto* service = r.service()) {
      services_.push_back(*service);
      serviceOf_[r.id] = services_.back();
    }
  }
  findFormerCauses();
}

// What the processes restarted (reloaded) on last cycle and no longer list, where
// the cause is no longer declared and its record is still there: its removal
// this cycle is a change of the process's input, like any other (docs/kinds.md).
// The table keeps what processes list, for the next cycle to compare.
void RestartLedger::findFormerCauses() {
  if (!store_ || (serviceOf_.empty() && !records_.anyProcess())) return;
  storedCauses_ = store_->processCauses();
  std::unordered_map<std::string, const decl::Resource*> processes;
  for (const auto& r : decl_.resources)
    if (r.service()) processes.emplace(r.id, &r);
  for (const auto& c : storedCauses_) {
    auto p = processes.find(c.process);
    if (p == processes.end()) continue;
    const auto& r = *p->second;
    auto lists = [&c](const std::vector<std::string>& ids) {
      return std::find(ids.begin(), ids.end(), c.cause) != ids.end();
    };
    if (lists(r.restartOn) || lists(r.reloadOn)) continue;
    // Only when a list lost an id: rare.
    if (declared_.declares(c.cause) || !records_.all().find(c.cause)) continue;
    former_[c.process].push_back({c.cause, c.reload});
    dependents_[c.cause].push_back({c.process, c.reload});
  }
  if (ctx_.applying()) writeProcessCauses();
}

// The table as it must be now: what every declared process lists, and its former
// causes whose records are still there (their removal is yet to be done: a crash
// or a failed removal leaves them for a later cycle). Written only when it differs.
void RestartLedger::writeProcessCauses() {
  std::vector<state::ProcessCause> now;
  for (const auto& r : decl_.resources) {
    for (const auto& c : r.restartOn) now.push_back({r.id, c, false});
    for (const auto& c : r.reloadOn) now.push_back({r.id, c, true});
  }
  for (const auto& [process, causes] : former_)
    for (const auto& f : causes)
      if (records_.all().find(f.cause) || prunedKept_.count(f.cause))
        now.push_back({process, f.cause, f.reload});
  auto order = [](const state::ProcessCause& a, const state::ProcessCause& b) {
    return std::tie(a.process, a.cause) < std::tie(b.process, b.cause);
  };
  std::sort(now.begin(), now.end(), order);
  if (now == storedCauses_) return;
  store_->setProcessCauses(now);
  storedCauses_ = std::move(now);
}

bool RestartLedger::isFormerCause(const std::string& process, const std::string& cause) const {
  auto f = former_.find(process);
  if (f == former_.end()) return false;
  for (const auto& c : f->second)
    if (c.cause == cause) return true;
  return false;
}

// Restarts owed from earlier cycles that the service has not paid yet (it has
// not started since they were recorded). An intent is paid only when its
// change happened: the cause holds, this cycle, what it was about to hold (or
// changed again); an intent whose change never happened is cancelled.
RestartCauses RestartLedger::causesFor(const decl::Resource& r, const Digest& want) {
  RestartCauses c;
  for (const auto& cause : r.restartOn)
    if (changed_.count(cause)) c.changed.push_back(cause);
  for (const auto& cause : r.reloadOn)
    if (changed_.count(cause)) c.reloadChanged.push_back(cause);
  if (auto f = former_.find(r.id); f != former_.end())
    for (const auto& [cause, reload] : f->second)
      if (changed_.count(cause))
        (reload ? c.reloadChanged : c.changed).push_back(cause + " (removed)");
  auto it = owed_.find(r.id);
  if (it != owed_.end()) {
    const auto& svc = ctx_.service(*r.service());
    bool unpaid = false;
    for (const auto& o : it->second) {
      if (svc.active && svc.sinceUs / 1000 > o.at) continue;  // started since: paid
      switch (o.intent.empty() ? IntentFate::Happened : intentFate(r, want, o)) {
        case IntentFate::Happened:
          (o.reload ? c.owedReload : c.owed).emplace_back(o.cause, o.cycle);
          break;
        case IntentFate::Unknown:  // the cause failed: decided in a later cycle
          unpaid = true;
          break;
        case IntentFate::NeverHappened:
          if (ctx_.applying()) store_->cancelOwedRestart(r.id, o.cause);
          break;
      }
    }
    // Only what was owed when the cycle began: a cause converged before this
    // process may have recorded a restart since, which its restart pays.
    if (c.owed.empty() && c.owedReload.empty() && !unpaid && ctx_.applying())
      store_->clearOwedRestarts(r.id, cycle_);
  }
  return c;
}

RestartLedger::IntentFate RestartLedger::intentFate(const decl::Resource& r, const Digest& want,
                                                    const state::OwedRestart& o) const {
  // Its own unit or bundle: if the process still wants what the intent named,
  // the change may have been made (the cycle then finds it in place, or makes
  // it and restarts anyway); wanting something else now, drift decides.
  if (o.cause == r.id && !o.reload)
    return o.intent == want.str() ? IntentFate::Happened : IntentFate::NeverHappened;
  // A cause the process no longer restarts (reloads) on owes it nothing more (a
  // confirmed row is still paid: its change is known to have happened).
  // A former cause (no longer declared, removed this cycle or before) owes
  // it what its removal owes.
  const auto& on = o.reload ? r.reloadOn : r.restartOn;
  if (std::find(on.begin(), on.end(), o.cause) == on.end() && !isFormerCause(r.id, o.cause))
    return IntentFate::NeverHappened;
  if (changed_.count(o.cause)) return IntentFate::Happened;
  auto held = heldNow_.find(o.cause);
  if (held == heldNow_.end()) return IntentFate::Unknown;
  return held->second == o.intent ? IntentFate::Happened : IntentFate::NeverHappened;
}

void RestartLedger::oweBeforeChange(Step& step, const std::string& id, std::string intent) {
  if (!ctx_.applying()) return;
  auto owes = dependents_.find(id);
  if (owes == dependents_.end()) return;
  step.setBeforeFirstChange([this, id, intent, processes = &owes->second] {
    std::vector<state::OwedRestart> intents;
    const int64_t now = unixNowMs();
    for (const auto& [process, reload] : *processes) {
      // A confirmed row this intent may not replace, yet paid already: it goes
      // first, or its older time would have a start before this change pay
      // for it too.
      if (auto paid = paidAtStart(process, id)) store_->settleOwedRestart(process, id, *paid);
      intents.push_back({process, id, cycle_, now, intent, reload});
    }
    store_->oweRestartsDurably(intents);
  });
}

// The time of the restart owed to `process` for `cause` when the cycle began,
// if the service has started since (paid); nullopt otherwise.
std::optional<int64_t> RestartLedger::paidAtStart(const std::string& process,
                                                  const std::string& cause) {
  auto rows = owed_.find(process);
  auto spec = serviceOf_.find(process);
  if (rows == owed_.end() || spec == serviceOf_.end()) return std::nullopt;
  for (const auto& o : rows->second) {
    if (o.cause != cause) continue;
    const auto& svc = ctx_.service(spec->second);
    if (svc.active && svc.sinceUs / 1000 > o.at) return o.at;
  }
  return std::nullopt;
}

bool RestartLedger::intendedBefore(const std::string& cause, const Digest& held) const {
  auto processes = dependents_.find(cause);
  if (processes == dependents_.end()) return false;
  for (const auto& [process, reload] : processes->second)
    if (auto rows = owed_.find(process); rows != owed_.end())
      for (const auto& o : rows->second)
        if (o.cause == cause && o.intent == held.str()) return true;
  return false;
}

}  // namespace mesh::apply::cycle
