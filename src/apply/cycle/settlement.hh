// How an outcome becomes final: counted in the report's tally, written in the
// state store (record, owed or paid restarts, history — or nothing, in the no-op
// path), and handed on in apply order. An outcome decided before it is final — a
// write staged in the batch, a start made at the cycle's end — is held, and holds
// back those after it from the sink, until it settles.
//
// The staged commit is here too: the batch of staged writes moves into place and
// only then are their outcomes recorded, so a record never claims a file that is
// not yet durable.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "apply/context.hh"
#include "apply/cycle.hh"
#include "apply/cycle/pending.hh"
#include "apply/cycle/restart_ledger.hh"
#include "state/store.hh"

namespace mesh::apply::cycle {

class Settlement {
 public:
  Settlement(Context& ctx, state::Store* store, CycleReport& report, KeepOutcomes keep,
             OutcomeSink sink, RestartLedger& ledger, Failures& failures)
      : ctx_(ctx),
        store_(store),
        report_(report),
        keep_(keep),
        sink_(std::move(sink)),
        ledger_(ledger),
        failures_(failures) {}

  // Every outcome kept: room for `n` at once (growing would hold two copies).
  void reserve(size_t n) {
    if (keep_ == KeepOutcomes::All && !sink_) report_.results.reserve(n);
  }
  // The index the next outcome held or emitted gets (Pending::resultIndex).
  size_t nextIndex() const { return base_ + report_.results.size(); }
  // The outcome at `index`, not yet handed to the sink.
  ResourceResult& result(size_t index) { return report_.results[index - base_]; }

  // Whether the report (or the sink) is given an outcome recorded at once (the
  // others always are).
  bool keeps(const Outcome& o) const {
    return keep_ == KeepOutcomes::All || o.verdict() != Verdict::Unchanged || !o.warning.empty();
  }
  // An outcome recorded later (a staged write, a start): held in the report, and
  // holding back those after it from the sink until settle().
  void hold(ResourceResult&& r);
  // An outcome final already: to the sink (after any held before it), or kept.
  void emit(ResourceResult&& r);
  // The held outcome at `index` is recorded: it and the final ones after it, up to
  // the next one held, go to the sink.
  void settle(size_t index);

  // Counts `p`'s outcome and, applying, writes what it changes in the store: in a
  // transaction of its own, or in `*shared` (opened there when needed, committed
  // by the caller) when given and the write need not be synced.
  void record(const Pending& p, Outcome& outcome,
              std::optional<state::Store::Txn>* shared = nullptr);

  // Staged writes. Before a resource: where its staged writes begin. After it:
  // how many it staged, or, when it did not converge, its staged writes dropped.
  void beginResource() { stagedMark_ = ctx_.stagedWrites(); }
  size_t stagedByResource() const { return ctx_.stagedWrites() - stagedMark_; }
  void dropResourceWrites() { ctx_.dropWritesFrom(stagedMark_); }
  // `p`'s outcome, recorded once its `staged` writes are in place.
  void awaitStaged(Pending p, size_t staged, ResourceResult&& r);
  // Whether `r` must see the staged writes in place first: it requires or
  // restarts on one of them (and, to fail or restart, needs its outcome).
  bool needsStaged(const decl::Resource& r) const;
  // Moves the staged writes into place (util/write_batch.hh) and records their
  // outcomes. A write that did not make it fails its resource, leaving the old file.
  void commitStaged();

 private:
  struct Write;
  std::optional<Write> writeFor(const Pending& p, const Outcome& outcome) const;
  void write(const Pending& p, const Outcome& outcome, const Write& w,
             std::optional<state::Store::Txn>* shared);

  Context& ctx_;
  state::Store* store_;
  CycleReport& report_;
  KeepOutcomes keep_;
  OutcomeSink sink_;
  RestartLedger& ledger_;
  Failures& failures_;
  // Outcomes whose writes are staged (with how many), recorded by commitStaged().
  std::vector<std::pair<Pending, size_t>> awaiting_;
  std::unordered_set<std::string> awaitingIds_;
  size_t stagedMark_ = 0;  // staged writes before the resource in hand
  // With a sink: outcomes handed to it and erased so far (report_.results holds
  // those after), which of the held ones are final, and how many of those at its
  // front were handed on already (moved from, erased once there are enough).
  static constexpr size_t kEraseHanded = 4096;
  size_t base_ = 0;
  std::vector<bool> final_;
  size_t handed_ = 0;
};

}  // namespace mesh::apply::cycle
