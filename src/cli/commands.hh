// One function per command; main.cc holds the table that wires them to CLI11.
// A command with options of its own has a small struct here that adds them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/common.hh"
#include "cli/fleet_options.hh"
#include "state/store.hh"

namespace mesh::cli {

// --detailed-exitcode (apply, rollback), as Puppet and Terraform have it: 0 nothing
// changed, 2 changes, 4 failures, 6 both; 1 the cycle could not run or bad input.
struct ExitCodes {
  bool detailed = false;
  void addTo(CLI::App& cmd);
};
inline constexpr int kExitDetailedChanges = 2;
inline constexpr int kExitDetailedFailures = 4;

// apply and rollback while mesh-host pause is in force: refused, nothing applied,
// unless --force.
inline constexpr int kExitPaused = 5;

struct ApplyOptions {
  std::string metrics;  // node_exporter textfile to write after the cycle; "" none
  ExitCodes exitCodes;
  bool force = false;  // --force: apply while paused
  std::string plan;    // --plan: apply this plan file exactly (apply/plan_file.hh), "" none
  void addTo(CLI::App& cmd);
};
// `apply --plan` refused: the plan no longer holds (nothing was applied).
inline constexpr int kExitPlanMoved = 4;

struct PlanOptions {
  std::string out;        // --out: write the plan file here, "" none
  bool detailed = false;  // --detailed-exitcode, as Terraform's plan: 0 none, 1 error, 2 changes
  void addTo(CLI::App& cmd);
};

struct StatusOptions {
  int churnThreshold = 2;    // churning at this many undeclared changes…
  int64_t churnWindow = 10;  // …within the node's last this-many cycles
  void addTo(CLI::App& cmd);
};

struct HistoryOptions {
  std::string id;  // "" every resource
  int64_t limit = 50;
  void addTo(CLI::App& cmd);
};

struct RollbackOptions {
  int64_t generation = 0;  // 0: the one before the current
  std::string metrics;
  ExitCodes exitCodes;
  bool force = false;  // --force: apply while paused
  void addTo(CLI::App& cmd);
};

struct GcOptions {
  int64_t keep = 5;  // generations whose bundles and blobs stay
  bool dryRun = false;
  void addTo(CLI::App& cmd);
};

// One cycle of `declaration` with the store open and locked, printed as `apply`
// prints it; returns apply's exit code. Shared by apply and rollback.
// Refuses (exit kExitPaused, nothing applied) while paused, unless `force`.
int applyAndReport(const decl::Declaration& declaration, const CommonOptions& o,
                   state::Store& store, const std::string& metricsPath,
                   const ExitCodes& exitCodes = {}, bool force = false);
// With the state lock held: while mesh-host pause is in force and not `force`, says
// so (stderr; the JSON answer with --json) and returns kExitPaused.
std::optional<int> refuseWhilePaused(const CommonOptions& o, const char* command, bool force);

// `pause --reason TEXT` and `resume` (cmd_pause.cc).
struct PauseOptions {
  std::string reason;
  void addTo(CLI::App& cmd);
};
int runPause(CommonOptions& o, const PauseOptions& p);
int runResume(CommonOptions& o);

int runApply(const std::string& declPath, CommonOptions& o, const ApplyOptions& a = {});
int runPlan(const std::string& declPath, CommonOptions& o, const PlanOptions& p = {});
int runStatus(CommonOptions& o, const StatusOptions& s = {});
int runHistory(CommonOptions& o, const HistoryOptions& h);
int runGenerations(CommonOptions& o);
int runRollback(CommonOptions& o, const RollbackOptions& r);
int runGc(CommonOptions& o, const GcOptions& g);

// `run`: the agent (src/agent).
struct RunOptions {
  std::string declaration;  // default <root>/etc/mesh-host/declaration.toml
  std::string interval = "5m";
  std::string splay = "30s";
  std::string logFormat = "text";
  std::string metrics;  // node_exporter textfile written after each cycle; "" none
  bool noop = false;    // --noop: every cycle only plans
  // fleet mode: the etcd endpoints the declaration comes from (--etcd, repeatable, each
  // one URL or a comma-separated list); empty none
  std::vector<std::string> etcd;
  std::string cluster = "default";
  EtcdConnectionOptions etcdConnection;  // fleet mode: TLS and auth
  void addTo(CLI::App& cmd);
};
int runRun(CommonOptions& o, const RunOptions& r);

// `seal`: a secret sealed to nodes' public keys, for `sealed = "…"` (cmd_seal.cc):
// keys given with --to, and/or the enrolled nodes --nodes names in etcd.
struct SealOptions {
  std::vector<std::string> to;     // node public key texts, "mesh-node:<base64>"
  std::vector<std::string> nodes;  // --nodes: names and globs of enrolled nodes (with --etcd)
  std::vector<std::string> etcd;   // --etcd: where --nodes are looked up
  std::string cluster = "default";
  EtcdConnectionOptions connection;
  FleetTrustOptions trust;  // the operator keys whose enrollments count
  std::string file;         // the secret; "-" for stdin
  void addTo(CLI::App& cmd);
};
int runSeal(const SealOptions& s);

// `blob add FILE --to DIR`: publishes FILE into a directory store by its digest.
struct BlobOptions {
  std::string file;
  std::string to;  // the store's directory; the blob lands at <to>/sha256/<hex>
  void addTo(CLI::App& cmd);
};
int runBlob(const BlobOptions& b);

// `key init|show [--operator FILE]`: the node's key pair, or an operator's signing key.
struct KeyOptions {
  std::string action;       // "init" or "show"
  std::string operatorKey;  // --operator FILE; "" the node's own key
  void addTo(CLI::App& cmd);
};
int runKey(CommonOptions& o, const KeyOptions& k);

// `sign --key FILE DECL`: writes DECL.sig, a detached signature over DECL's bytes.
struct SignOptions {
  std::string key;  // the operator key file
  void addTo(CLI::App& cmd);
};
int runSign(const std::string& declPath, const SignOptions& s);

// `fleet push|status`: the operator's side of fleet mode, through etcd (docs/fleet.md).
// Neither touches this machine's state store, so they take none of the common options.
struct FleetOptions {
  std::vector<std::string> etcd;  // --etcd: the members' client URLs, "http://host:2379"
  std::string cluster = "default";
  bool json = false;
  EtcdConnectionOptions connection;  // TLS and auth (cli/fleet_options.hh)
  // --trust: the operator keys whose node enrollments are accepted; registered by the
  // commands that read node statuses (fleet status), not by addTo.
  FleetTrustOptions trust;
  // `takesJson`: whether the command answers in JSON with --json (serve does not).
  void addTo(CLI::App& cmd, bool takesJson = true);
};

// `fleet enroll NODE KEY` and `fleet forget NODE...` (cmd_fleet_enroll.cc).
struct FleetEnrollOptions {
  std::string key;        // the operator key file that signs the record
  std::string node;       // the node
  std::string publicKey;  // its key, "mesh-node:…" as `mesh-host key show` prints it
  void addTo(CLI::App& cmd);
};
int runFleetEnroll(const FleetOptions& f, const FleetEnrollOptions& e);

struct FleetForgetOptions {
  std::vector<std::string> nodes;
  bool force = false;  // also a node that is up
  void addTo(CLI::App& cmd);
};
int runFleetForget(const FleetOptions& f, const FleetForgetOptions& g);

struct FleetPushOptions {
  std::string key;                 // the operator key file
  std::vector<std::string> node;   // --node, repeatable
  std::vector<std::string> nodes;  // --nodes: comma-separated names and globs
  int64_t maxParallelRestarts = 0;
  std::string wait;                 // a duration ("30s"); "" does not wait
  std::string lockTimeout = "30s";  // how long to wait for another push's lock
  std::string declaration;
  std::string each;  // --each DIR: DIR/<node>.toml to each node, in place of DECL
  // A rollout (fleet/rollout.hh) when --canary is given; "" / 0 / false: not given.
  int64_t canary = 0;
  std::string wave, minHealthy, healthyDeadline;
  bool autoRevert = false;
  void addTo(CLI::App& cmd);
};
int runFleetPush(const FleetOptions& f, const FleetPushOptions& p);

// `fleet rollout status|resume|abort` (cmd_fleet_rollout.cc).
struct FleetRolloutOptions {
  std::string action;               // status, resume, abort
  std::string key;                  // the operator key file (resume, abort)
  bool revert = false;              // abort: the nodes reached get their previous declaration
  std::string lockTimeout = "30s";  // how long to wait for a lock (a dead driver's)
  void addTo(CLI::App& cmd);
};
int runFleetRollout(const FleetOptions& f, const FleetRolloutOptions& r);

// `fleet history`: the recorded pushes, newest first (cmd_fleet_history.cc).
struct FleetHistoryOptions {
  int64_t limit = 20;
  void addTo(CLI::App& cmd);
};
int runFleetHistory(const FleetOptions& f, const FleetHistoryOptions& h);
int runFleetStatus(const FleetOptions& f);

// `fleet serve`: the fleet's page, live (cmd_fleet_serve.cc).
struct FleetServeOptions {
  std::string listen = "127.0.0.1:8080";
  bool listenPublic = false;  // allow a non-loopback --listen
  void addTo(CLI::App& cmd);
};
int runFleetServe(const FleetOptions& f, const FleetServeOptions& s);

}  // namespace mesh::cli
