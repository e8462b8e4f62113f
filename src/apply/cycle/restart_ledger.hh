// The owed-restart ledger of one cycle: which processes restart (or reload) on
// which causes, the restarts owed by earlier cycles and whether they are paid,
// the intents written before a change that owes one, and the causes a process
// no longer lists whose removal still owes it (docs/kinds.md, "restart-on").
//
// Its rule: a restart is owed before the change that owes it is made (an intent,
// synced), and paid only by a start after it; an intent whose change never
// happened is cancelled.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "apply/context.hh"
#include "apply/cycle/pending.hh"
#include "apply/cycle/records_in_hand.hh"
#include "apply/step.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::apply::cycle {

// A resource a process restarted (reloaded) on, no longer listed.
struct FormerCause {
  std::string cause;
  bool reload = false;
};

class RestartLedger {
 public:
  // The intent of a change that removes a cause: what it holds after (nothing).
  static constexpr const char* kRemovedIntent = "removed";

  // `cycle` is the number of the cycle being applied (0 until it is begun, and
  // when planning).
  RestartLedger(Context& ctx, const decl::Declaration& d, state::Store* store,
                RecordsInHand& records, DeclaredIndex& declared, const int64_t& cycle)
      : ctx_(ctx), decl_(d), store_(store), records_(records), declared_(declared), cycle_(cycle) {}

  // The restarts earlier cycles left owed.
  void load();
  // Who restarts on what, each declared process's service, and the former causes
  // (writing the table of causes when applying).
  void prepare();

  bool anyOwed() const { return !owed_.empty(); }
  // The declared processes' services, in declaration order.
  const std::vector<std::string>& services() const { return services_; }
  // Process id → its service, for the declared processes.
  const std::unordered_map<std::string, std::string>& serviceOf() const { return serviceOf_; }
  // The former causes of `process`; nullptr when it has none.
  const std::vector<FormerCause>* formerCausesOf(const std::string& process) const {
    if (former_.empty()) return nullptr;
    auto f = former_.find(process);
    return f == former_.end() ? nullptr : &f->second;
  }
  // The processes a change of `id` owes; nullptr when none.
  const std::vector<Dependent>* dependentsOf(const std::string& id) const {
    auto owes = dependents_.find(id);
    return owes == dependents_.end() ? nullptr : &owes->second;
  }

  // Why process `r` (wanting `want`) must restart or reload in this cycle.
  RestartCauses causesFor(const decl::Resource& r, const Digest& want);
  // Before the first change of `step`, the restarts a change of `id` to `intent`
  // will owe are written as intents and synced (applying, when it owes any).
  void oweBeforeChange(Step& step, const std::string& id, std::string intent);
  // An earlier cycle wrote an intent for `cause` about to hold `held`.
  bool intendedBefore(const std::string& cause, const Digest& held) const;

  // What this cycle did to a cause: changed it (its processes restart), holds
  // `held` now (intents are judged against it), or failed it (neither).
  void changed(const std::string& id) { changed_.insert(id); }
  void holds(const std::string& id, const Digest& held) {
    if (dependents_.count(id)) heldNow_[id] = held.str();  // only causes: a no-op cycle copies none
  }
  // Removed now (or found gone: an intent then says whether an earlier cycle
  // deleted it, see intentFate).
  void holdsRemoved(const std::string& id) { heldNow_[id] = kRemovedIntent; }
  void failed(const std::string& id) {
    changed_.erase(id);
    heldNow_.erase(id);
  }
  // Pruned, and its record stays (the removal failed or released it).
  void prunedKept(const std::string& id) { prunedKept_.insert(id); }

  // At the cycle's end: the causes removed are no one's now.
  void finish() {
    if (!former_.empty()) writeProcessCauses();
  }

 private:
  enum class IntentFate { Happened, NeverHappened, Unknown };
  void findFormerCauses();
  void writeProcessCauses();
  bool isFormerCause(const std::string& process, const std::string& cause) const;
  IntentFate intentFate(const decl::Resource& r, const Digest& want,
                        const state::OwedRestart& o) const;
  std::optional<int64_t> paidAtStart(const std::string& process, const std::string& cause);

  Context& ctx_;
  const decl::Declaration& decl_;
  state::Store* store_;
  RecordsInHand& records_;
  DeclaredIndex& declared_;
  const int64_t& cycle_;
  std::map<std::string, std::vector<state::OwedRestart>> owed_;
  // A process that restarts (reload false) or reloads on a cause.
  std::unordered_map<std::string, std::vector<Dependent>> dependents_;  // cause → processes
  // What processes listed at the newest cycle (process_causes), and each
  // declared process's former causes (no longer listed, no longer declared,
  // their record still there: removed this cycle).
  std::vector<state::ProcessCause> storedCauses_;
  std::unordered_map<std::string, std::vector<FormerCause>> former_;  // process → causes
  std::unordered_set<std::string> prunedKept_;              // pruned, and the record stays (failed)
  std::unordered_map<std::string, std::string> serviceOf_;  // process → service
  std::vector<std::string> services_;                       // the declared processes' services
  std::unordered_set<std::string> changed_;
  std::unordered_map<std::string, std::string> heldNow_;  // id → digest held after this cycle
};

}  // namespace mesh::apply::cycle
