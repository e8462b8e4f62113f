// What every resource of a cycle shares — places beneath the root, the supervisor,
// blobs, the node key, staged writes — and whether the cycle applies or plans: in
// plan mode the gate (Step::change, apply/step.hh) is closed, so `plan` runs
// exactly the code `apply` runs, minus the writes. What is one resource's alone
// (its restart causes, its hooks) is its Step, never set here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "apply/restart_permit.hh"
#include "blob/blob_source.hh"
#include "decl/model.hh"
#include "state/store/retention.hh"
#include "supervise/counting.hh"
#include "supervise/supervisor.hh"
#include "trust/node_key.hh"
#include "util/accounts.hh"
#include "util/beneath.hh"
#include "util/faults.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/write_batch.hh"

namespace mesh::apply {

class Originals;  // apply/originals.hh
class LookAhead;  // apply/look_ahead.hh

struct Settings {
  std::string root = "/";  // every declared absolute path lives under it
  std::string stateDir;
  std::string blobs;  // blob source spec
  // Opens `blobs` (a directory or a URL), caching fetched blobs under the cache
  // directory given; unset, `blobs` must be a directory. The cycle never links the
  // network itself: its callers pass blob::openBlobSource (blob/http_source.hh).
  std::function<std::unique_ptr<blob::BlobSource>(const std::string& spec,
                                                  const std::string& cacheDir)>
      openBlobs = {};
  std::string node;
  bool plan = false;
  // Applying, also make the diffs a plan shows (the fleet agent's node report).
  bool diffs = false;
  // A rollback: an `absent` no longer declared puts back what it removed.
  bool rollback = false;
  std::string supervisor = "auto";  // auto | builtin | systemd
  std::string unitDir = "/etc/systemd/system";
  // How much of its past the store keeps: every applying cycle trims it to these
  // bounds once its row is finished (docs/state-store.md, "Bounds").
  state::Retention retention = {};
  // TEST-ONLY SEAM (tests/sim): makes the supervisor backend instead of
  // `supervisor`; empty in every real run.
  std::function<std::unique_ptr<supervise::Supervisor>()> makeSupervisor = {};
};

// Why a process must restart (or reload) in this cycle, besides its own state.
struct RestartCauses {
  std::vector<std::string> changed;  // its restart-on ids created/updated/removed this cycle
  // Restarts owed by an earlier cycle that was cut short: (cause id, cycle).
  std::vector<std::pair<std::string, int64_t>> owed;
  // The same for reload-on: a reload, unless a restart is due anyway (it wins).
  std::vector<std::string> reloadChanged;
  std::vector<std::pair<std::string, int64_t>> owedReload;
  bool restarts() const { return !changed.empty() || !owed.empty(); }
  bool reloads() const { return !reloadChanged.empty() || !owedReload.empty(); }
  bool empty() const { return !restarts() && !reloads(); }
};

class Context {
 public:
  explicit Context(Settings s);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool applying() const { return !settings_.plan; }
  bool planning() const { return settings_.plan; }
  const Settings& settings() const { return settings_; }

  // The gate for what no resource's step owns (a step's acts go through
  // Step::change, apply/step.hh): runs `act` only when applying.
  template <typename F>
  void changeOwingNothing(F&& act) {
    if (!applying()) return;
    beforeAnyChange();
    act();
  }
  // Set by the cycle: runs before the first act of the whole cycle (the state
  // store's integrity check, so that a damaged store fails a cycle before it
  // changes anything, and a cycle that changes nothing does not pay for it).
  void setBeforeAnyChange(std::function<void()> hook) { beforeAnyChange_ = std::move(hook); }
  void beforeAnyChange() {
    if (ahead_) stopLookingAhead();  // what it took may not hold after an act
    if (!beforeAnyChange_) return;
    beforeAnyChange_();  // kept until it passes: a failed check fails every act
    beforeAnyChange_ = nullptr;
  }

  // Where a declared path lives: the directory holding it, opened beneath the
  // root without following a link (util/beneath.hh), and its last component.
  // Every act on a declared path goes through `dir`; no path string is handed to
  // the kernel after the walk. `dir` is -1 when a parent is missing.
  struct Place {
    FdRef dir;  // borrowed from the context: valid for the cycle
    std::string name;
    const std::string& shown;  // the declared path, for messages
  };
  // Throws PathRefused when a component on the way is a link or not a directory.
  Place place(const std::string& declared);
  // The same, creating missing parents 0755 root:root; `created` (optional)
  // receives what was made, for removeCreated when the act fails. For a staged
  // write (stageWrite), the batch's commit makes them durable (Synced::Later).
  Place makePlace(const std::string& declared, std::vector<std::string>* created = nullptr,
                  Beneath::Synced synced = Beneath::Synced::Each);
  void removeCreated(const std::vector<std::string>& created);
  // lstat of a place; nullopt when nothing is there (or, in a plan, when this
  // cycle would have removed what is there: see planRemoved).
  std::optional<struct stat> look(const Place& p);
  std::optional<struct stat> lstatDeclared(const std::string& declared) {
    return look(place(declared));
  }
  // The cycle's files looked at ahead of it, on a second thread
  // (apply/look_ahead.hh): started by the cycle before its resources (when
  // there are enough files to be worth it), stopped at its first act and at
  // its end. lookedAhead(r): the fingerprint of what is at r's path, taken
  // ahead, when one was and it may stand for a look now; a caller uses it only
  // to find nothing to do, and looks (place, look) otherwise.
  void lookAhead(const std::vector<decl::Resource>& resources);
  void stopLookingAhead();
  std::optional<Fingerprint> lookedAhead(const decl::Resource& r);
  // The look-ahead running now, if any (for tests: how far it got).
  const LookAhead* lookingAhead() const { return ahead_.get(); }
  // Planning: `declared` would have been removed by now (an object of another
  // kind that this cycle replaces), so what follows is planned as on an empty path.
  void planRemoved(const std::string& declared) { planRemoved_.insert(declared); }
  // Planning: this cycle would have stopped and uninstalled `service` by now (a
  // process removed whose service name a declared one takes over), so what follows
  // observes it as apply would: not installed, not running.
  void planUninstalled(const std::string& service) { planUninstalled_.insert(service); }
  // Users and groups at the root (util/accounts.hh). Planning: an account this
  // cycle would have created by now (a `user` or `group` planned before what
  // names it), so what names it is planned as apply would do it.
  const Accounts& accounts() const { return accounts_; }
  void planAccount(bool group, const std::string& name) {
    (group ? plannedGroups_ : plannedUsers_).insert(name);
  }
  bool accountPlanned(bool group, const std::string& name) const {
    return (group ? plannedGroups_ : plannedUsers_).count(name) != 0;
  }
  // Directories held open are forgotten (after a directory was removed or
  // exchanged, and at the start of every cycle).
  void forgetDirs() { dirs_.clear(); }
  // After a cycle that did not finish: every place is swept of the temp files
  // and half-switched trees a killed write left (util/fs.hh removeLeftoversAt).
  void setSweepLeftovers(bool on) { sweep_ = on; }
  // Paths that a credential's record holds: a plan shows no content of them,
  // whatever is declared there now.
  void setSecretPaths(std::unordered_set<std::string> paths) { secretPaths_ = std::move(paths); }
  bool wasSecret(const std::string& path) const { return secretPaths_.count(path) != 0; }

  // Replaces the file at `to` durably, as atomicWriteAt does, but in a batch
  // (util/write_batch.hh): staged now, moved into place when the cycle commits
  // the batch — before it records the outcome. `observe` turns the file's lstat
  // once in place into the outcome's `observed`. Only inside Step::change().
  using Observe = std::function<std::string(const struct stat&)>;
  void stageWrite(const Place& to, std::string_view content, mode_t mode, Ownership owner,
                  Observe observe);
  // For the cycle: how many writes are staged, whether it must commit before
  // staging more, the commit (per staged write in order: the error, or what
  // `observe` made of it), and dropping those of a resource that failed.
  struct Committed {
    std::optional<std::string> error;
    std::string observed;
  };
  size_t stagedWrites() const { return writes_.size(); }
  // Directories made for staged writes are durable once the batch commits; an
  // act that writes at once (another kind) makes them durable first, since what
  // it writes may lie in them.
  void syncMadeDirs();
  bool writesFull() const { return writes_.full(); }
  std::vector<Committed> commitWrites();
  void dropWritesFrom(size_t from);

  blob::BlobSource& blobs();
  // The node key: loaded or created when applying; when planning on a node that
  // has none yet, an in-memory one (nothing is written by a plan).
  const trust::NodeKey& nodeKey();

  supervise::Supervisor& supervisor();
  // What this cycle asked of the supervisor (all zero when it was never needed).
  supervise::CallCounts supervisorCalls() const;
  // The services this cycle may look at: observed all at once, at first use.
  void expectServices(std::vector<std::string> names, bool detailed);
  const supervise::ServiceState& service(const std::string& name);

  // The number of the cycle being applied (set by the cycle; 0 when planning).
  void setCycle(int64_t cycle) { cycle_ = cycle; }
  int64_t cycle() const { return cycle_; }

  // Fleet mode (rolling restarts): called before each restart, not a first start,
  // with the service's name; returns the permit holding the slot, released once the
  // restart is done and the service active again. Throws mesh::Error when no slot
  // can be had: that restart then fails and stays owed. Unset: no limit.
  RestartGate holdRestartSlot;

  // Called after each declared resource the cycle went through, with how many of
  // how many: what a terminal's progress line shows. Unset: nothing.
  std::function<void(size_t done, size_t total)> progress;
  // How far a bundle's download or unpacking has got, in bytes. Unset: nothing.
  ByteProgress byteProgress;

  // Set (from a signal handler) to end the cycle after the resource in hand: the
  // cycle records it, skips the rest (reported as not converged) and finishes.
  void setStopFlag(const std::atomic<bool>* flag) { stop_ = flag; }
  bool stopRequested() const { return stop_ && stop_->load(); }

  // Where process bundles are unpacked: <state-dir>/bundles/<hex>.
  std::string bundleDir(const Digest& bundle) const;
  // The state dir, opened at first use: what mesh-host writes there (bundles) is
  // reached beneath it without following a link (shown as <state-dir>/<rel>).
  Beneath& stateDirBeneath();

  // What mesh-host first overwrote, kept (apply/originals.hh); made at first use.
  Originals& originals();

 private:
  // Keeps an open parent in dirs_, within its bound (util/open_files.hh).
  std::unordered_map<std::string, Fd>::iterator keepDir(const std::string& key, Fd fd);

  Settings settings_;
  std::unique_ptr<supervise::CountingSupervisor> supervisor_;
  std::vector<std::string> expected_;
  bool detailed_ = false;
  std::optional<std::map<std::string, supervise::ServiceState>> services_;
  int64_t cycle_ = 0;
  const std::atomic<bool>* stop_ = nullptr;
  std::function<void()> beforeAnyChange_;
  std::unique_ptr<Beneath> root_;
  std::unique_ptr<LookAhead> ahead_;  // after root_: it looks beneath it
  std::unique_ptr<Beneath> stateDir_;
  std::unique_ptr<Originals> originals_;
  std::unordered_map<std::string, Fd> dirs_;  // parent (relative to the root) → open dir
  bool sweep_ = false;
  std::unordered_set<std::string> secretPaths_;
  std::unordered_set<std::string> planRemoved_;
  std::unordered_set<std::string> planUninstalled_;
  Accounts accounts_{settings_.root};
  std::unordered_set<std::string> plannedUsers_, plannedGroups_;
  WriteBatch writes_;
  std::vector<std::string> unsyncedParents_;  // of directories made for staged writes
  std::vector<Observe> observers_;            // one per staged write
  std::unique_ptr<blob::BlobSource> blobs_;
  std::optional<trust::NodeKey> key_;
};

}  // namespace mesh::apply
