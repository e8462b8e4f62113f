// The durable state store: one SQLite file (<state-dir>/state.db) in WAL mode.
// It remembers, per resource, what mesh-host last wrote (a hint and a fast path,
// never the only evidence), the numbered cycles, a bounded history of outcomes
// that were not `unchanged`, and every distinct declaration applied
// (generations). docs/state-store.md describes every table. The rows' types are
// beside the files of their tables (state/store/records.hh, cycles.hh, restarts.hh,
// generations.hh); the state lock is state/lock.hh.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "state/cycle_error.hh"
#include "state/declaration_error.hh"
#include "state/state_dir.hh"
#include "state/store/cycles.hh"
#include "state/store/generations.hh"
#include "state/store/records.hh"
#include "state/store/restarts.hh"
#include "state/store/retention.hh"
#include "util/compiled_cache.hh"

namespace mesh::state {

class Records;  // state/records.hh

class Store {
 public:
  enum class Access { ReadWrite, ReadOnly };

  // Opens (creating when ReadWrite) <stateDir>/state.db. Throws mesh::Error when
  // the file is not a mesh-host store, its schema is newer than this build, or it
  // is damaged. A ReadWrite open is a cycle's: when it fails, the error is also
  // left in <stateDir>/last-error (noteCycleError) for `status` to show.
  static Store open(const std::string& stateDir, Access access = Access::ReadWrite);
  // The same, ReadOnly by default, for a reader: nullopt when no store was ever
  // created there (nothing applied yet).
  static std::optional<Store> openIfExists(const std::string& stateDir,
                                           Access access = Access::ReadOnly);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  static constexpr int kSchemaVersion = 3;
  // History keeps the outcomes of the last this-many cycles.
  static constexpr int64_t kHistoryCycles = 200;

  // PRAGMA quick_check, once per open store: throws the "state store … is
  // damaged …; move it aside …" error (and notes it, see noteCycleError) when a
  // page is corrupt. A ReadWrite store runs it by itself before its first write
  // of a resource's record, history or owed restart — not on open, and not for a
  // cycle's own row: it costs about 5-10 ms on a 10,000-record store, which a
  // no-op cycle (no such write) does not pay. Reading a damaged page fails with
  // the same error whenever it happens.
  void checkIntegrity();

  std::unordered_map<std::string, Record> loadRecords();
  // The same records, compact (state/records.hh): what a cycle holds. Room is
  // made for `expected` records at once (more may come: the set then grows).
  Records loadRecordSet(size_t expected = 0);
  std::optional<Record> record(const std::string& id);

  // All writes below run inside the current transaction when there is one.
  void putRecord(const Record& r);
  void deleteRecord(const std::string& id);

  // Restarts owed to processes (see schema.sql). Write them in the transaction
  // that records their cause; clear them in the one that records the restart.
  // A confirmed row replaces an intent; an intent never replaces a confirmed row.
  // Reloads are owed the same way (OwedRestart::reload); a confirmed row that owes
  // a restart stays one when a reload is owed for the same cause (an intent, whose
  // change may never have happened, takes the new row's kind).
  void oweRestart(const OwedRestart& o);
  // Writes intents in their own transaction, synced to disk before it returns
  // (synchronous = FULL for it): what a change owes is durable before the change
  // is made, across an OS crash too. Must be called outside a transaction.
  void oweRestartsDurably(const std::vector<OwedRestart>& intents);
  std::vector<OwedRestart> owedRestarts();
  // Clears what `process` is owed; with `beforeCycle`, only what earlier cycles
  // recorded (what a cycle found paid when it started: it may have recorded
  // more since, for changes of its own that its restart has yet to pay).
  void clearOwedRestarts(const std::string& process,
                         std::optional<int64_t> beforeCycle = std::nullopt);
  // Clears the reloads owed to `process` (what its reload paid), not its restarts.
  void clearOwedReloads(const std::string& process);
  // Drops one intent whose change never happened.
  void cancelOwedRestart(const std::string& process, const std::string& cause);
  // Drops the restart owed to `process` for `cause` when it was recorded at
  // `at` or before: one found paid (the service started since), and not
  // recorded again since.
  void settleOwedRestart(const std::string& process, const std::string& cause, int64_t at);

  // What each process restarted or reloaded on (see ProcessCause), ordered by
  // process and cause; empty in a store made before the table.
  std::vector<ProcessCause> processCauses();
  // Makes the table hold `causes` (the rows are replaced only where they differ,
  // in one transaction of its own unless one is open).
  void setProcessCauses(const std::vector<ProcessCause>& causes);

  // Returns the new number. `node`: the name the cycle runs as (--node), which
  // `status` shows when not given one.
  int64_t beginCycle(int64_t startedAt, int64_t generation, const std::string& node = {});
  // Also makes the cycle's records, history and owed restarts durable (the WAL
  // synced) when any was written since the last sync; a no-op cycle syncs nothing.
  void finishCycle(const Cycle& c);
  void addHistory(const HistoryEntry& h);  // trims entries older than kHistoryCycles

  // Returns the generation number of this declaration text, adding it when new.
  // `source` and `baseDir` (kept from the latest apply) let a rollback resolve
  // relative paths as the original apply did.
  // `serial` is the declaration's own (docs/trust.md), kept for the replay guard.
  int64_t recordGeneration(const std::string& digest, const std::string& text, int64_t now,
                           const std::string& source = {}, const std::string& baseDir = {},
                           std::optional<int64_t> serial = std::nullopt);
  // Whether a generation of this text digest is recorded: recordGeneration then
  // does not read its text.
  bool knowsGeneration(const std::string& digest);
  std::vector<Generation> generations();
  std::optional<std::string> generationText(int64_t generation);
  // The highest serial of any generation applied, and when that generation was
  // last applied; nullopt when no applied declaration carried a serial.
  struct AppliedSerial {
    int64_t serial = 0;
    int64_t generation = 0;
    int64_t lastAppliedAt = 0;  // unix ms
  };
  std::optional<AppliedSerial> highestSerial();
  std::optional<GenerationDeclaration> generationDeclaration(int64_t generation);

  // Trims the store to the bounds `r` (store/retention.hh; retention.cc says what
  // is never trimmed) as of `now` (unix ms), in one transaction of its own: at
  // most r.batch rows of each table, then free pages given back when they piled
  // up. `pinned`: generations the caller needs besides. Must be called outside a
  // transaction, by the holder of the state lock (a cycle, gc).
  TrimReport trim(const Retention& r, int64_t now, const std::set<int64_t>& pinned = {});
  // The generations trimming never drops, whatever the bounds (retention.cc).
  std::set<int64_t> generationsInUse();
  // The bounds the last trim that dropped anything ran with; nullopt when none did.
  std::optional<Retention> lastRetention();
  // Whether generation `n` existed once and was trimmed (numbers are never reused:
  // a missing number below the newest is a trimmed one).
  bool generationTrimmed(int64_t generation);
  // The oldest cycle row kept; nullopt when there is none.
  std::optional<int64_t> oldestCycle();

  // Fleet mode: the pushed declaration last cycled with (see schema.sql).
  struct FleetDeclaration {
    std::string key;
    int64_t revision = 0;
    std::string envelope;
    int64_t receivedAt = 0;
  };
  void putFleetDeclaration(const FleetDeclaration& f);
  std::optional<FleetDeclaration> fleetDeclaration(const std::string& key);

  // The compiled declaration stored under `key` (src/decl/compiled.hh) in the store
  // at stateDir; nullopt when there is none, or on any failure. It takes no lock
  // and writes nothing, not even SQLite's -shm (immutable mode): an apply of a bad
  // declaration leaves the state directory as it was. So it may miss a row a
  // running writer has not checkpointed yet, or read one torn by it — the form's
  // own checks refuse that, and the caller parses.
  static std::optional<std::string> peekCompiledDeclaration(const std::string& stateDir,
                                                            const std::string& key) noexcept;
  // The same form, read the same way, but not copied out whole: when there is
  // one, `use` is called with its size and a function that copies the n bytes at
  // an offset into a buffer (false when they cannot be read), valid during the
  // call. Returns whether `use` was called. Any failure of the store is a miss;
  // what `use` throws is the caller's.
  using FormPiece = std::function<bool(size_t offset, char* out, size_t n)>;
  static bool readCompiledDeclaration(
      const std::string& stateDir, const std::string& key,
      const std::function<void(size_t size, const FormPiece&)>& use);
  // Keeps `form` under `key`, in place of any other. Never throws: a cache that
  // cannot be written (a full disk) is left as it is.
  void putCompiledDeclaration(const std::string& key, std::string_view form);
  // The same, the form written by `write` a piece at a time (asked its size
  // first), never held whole; one that writes other than the size it gave is
  // not kept.
  void putCompiledDeclaration(const std::string& key, const FormWriter& write);

  // The newest cycle row, finished or not (one still running, or cut short).
  std::optional<Cycle> lastCycle();
  // The newest cycle that finished.
  std::optional<Cycle> lastFinishedCycle();
  // The name the newest cycle that recorded one ran as; nullopt when none did.
  std::optional<std::string> nodeName();
  const std::string& stateDir() const;
  // The newest `limit` cycles (every cycle when limit <= 0), newest first.
  std::vector<Cycle> cycles(int64_t limit);
  int64_t cycleCount();
  // Newest first; an empty id means every resource.
  std::vector<HistoryEntry> history(const std::string& id, int64_t limit);

  // A transaction that rolls back unless committed. Its commit is durable
  // across a process crash; an OS crash may take back the last commits
  // (synchronous = NORMAL) unless it is Sync::Full: then the commit is synced
  // to disk before commit() returns. Otherwise what it wrote is synced as its
  // writes' kinds say (WriteKind, state/store/impl.hh): records and the like
  // when the cycle finishes, a cycle's own row never on its own account.
  class Txn {
   public:
    enum class Sync { Normal, Full };
    explicit Txn(Store& s, Sync sync = Sync::Normal);
    Txn(const Txn&) = delete;
    Txn& operator=(const Txn&) = delete;
    ~Txn();
    void commit();

   private:
    void backToNormal();
    Store* store_;
    bool done_ = false;
    bool full_ = false;
  };

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mesh::state
