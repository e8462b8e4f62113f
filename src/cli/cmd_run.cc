// `mesh-host run`: the agent. The loop lives in src/agent; this wires it to the
// command line: options, the one-agent-per-state-dir lock, how the declaration is
// loaded, how outcomes are rendered, and metrics.
#include <cstdio>
#include <filesystem>

#include "agent/agent.hh"
#include "agent/agent_lock.hh"
#include "agent/log.hh"
#include "cli/commands.hh"
#include "cli/metrics.hh"
#include "cli/output.hh"
#include "decl/parse.hh"
#include "fleet/protocol.hh"
#include "trust/signing.hh"
#include "util/duration.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

void RunOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--declaration", declaration,
                 "the declaration to converge to (TOML), watched (default "
                 "<root>/etc/mesh-host/declaration.toml)")
      ->option_text("DECL")
      ->default_str("<root>/etc/mesh-host/declaration.toml");
  cmd.add_option("--interval", interval,
                 "time between cycles: 500ms, 30s, 5m, 1h, plain seconds (default 5m)")
      ->option_text("DURATION")
      ->default_str("5m");
  cmd.add_option("--splay", splay,
                 "a random delay in [0, splay] added to each interval (default 30s)")
      ->option_text("DURATION")
      ->default_str("30s");
  cmd.add_option("--log-format", logFormat,
                 "log lines on stderr: text, or json for shippers (default text)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_str("text");
  cmd.add_option("--metrics", metrics, "node_exporter textfile written after each cycle")
      ->option_text("FILE");
  cmd.add_flag("--noop", noop,
               "every cycle only plans (as mesh-host plan): nothing on the node is changed; "
               "drift and pending changes show in the log, status and the metrics");
  addEtcdOption(cmd, etcd,
                "fleet mode: take the declaration from etcd "
                "(/mesh/<cluster>/nodes/<node>/declaration, pushed with mesh-host fleet push), "
                "apply each new revision at once, publish this node's status there; requires "
                "a trusted operator key");
  cmd.add_option("--cluster", cluster,
                 "fleet mode: the cluster's name in etcd keys (default "
                 "default)")
      ->option_text("NAME")
      ->default_str("default");
  etcdConnection.addTo(cmd);
}

namespace {

// Takes the one-agent-per-state-dir lock and runs the agent.
int runAgentLocked(CommonOptions& o, const RunOptions& r, agent::AgentOptions& a) {
  makeDirs(o.stateDir, 0750);
  std::optional<pid_t> holder;
  auto lock = agent::AgentLock::tryAcquire(o.stateDir, &holder);
  if (!lock) {
    printLine(fmt::format("mesh-host: another agent{} is running for {}; stop it first",
                          holder ? fmt::format(" (pid {})", *holder) : "", o.stateDir),
              stderr);
    return kExitBadInput;
  }

  a.settings = o.settings(/*plan=*/false);
  a.settings.diffs = a.fleet.has_value();  // the node report carries them (fleet/report.hh)
  a.verbose = o.verbose;
  a.noop = r.noop;
  a.load = [&o](const std::string& path) { return loadDeclarationFor(path, o); };
  a.outcomeLine = [](const apply::ResourceResult& res, bool plan) {
    return outcomeLine(res, plan);
  };
  a.summaryLine = [](const apply::CycleReport& rep, bool plan) { return summaryLine(rep, plan); };
  if (!r.metrics.empty()) {
    a.afterCycle = [&o, path = r.metrics](const apply::CycleReport& rep, state::Store& store) {
      writeMetrics(path, rep, store, o.node);
    };
    // A cycle that only planned: the figures of the last cycle that applied, with
    // the pause and what waits.
    a.afterPlan = [&o, path = r.metrics](const apply::CycleReport&, state::Store& store) {
      writeMetrics(path, lastAppliedReport(store), store, o.node);
    };
  }

  agent::Logger log(r.logFormat == "json" ? agent::LogFormat::Json : agent::LogFormat::Text,
                    agent::stderrIsJournal());
  return agent::runAgent(a, log);
}

// Fleet mode: the declaration comes from etcd; see src/agent/fleet_link.hh.
int runFleetNode(CommonOptions& o, const RunOptions& r, agent::AgentOptions& a) {
  if (!r.declaration.empty())
    throw InputError("--declaration and --etcd: a node takes its declaration from one place");
  fleet::checkFleetName(o.node, "--node");
  fleet::checkFleetName(r.cluster, "--cluster");
  agent::FleetOptions f;
  f.endpoint = etcdEndpoints(r.etcd);
  f.connection = r.etcdConnection.config(f.endpoint);
  f.connection.spreadBy = o.node;  // the nodes of a fleet spread over the members
  f.cluster = r.cluster;
  f.node = o.node;
  f.version = kVersion;
  f.interval = a.interval;
  f.trusted = trust::loadTrustedKeys(o.trust, o.stateDir);
  if (f.trusted.empty())
    throw InputError(
        "--etcd: fleet mode requires a trusted operator key (--trust KEY, or a .pub file in "
        "{}/trusted/): anyone who can write to etcd could otherwise change this node",
        o.stateDir);
  const std::string baseDir = (o.root == "/" ? "" : o.root) + "/etc/mesh-host";
  f.parse = [&o, baseDir, cluster = r.cluster](const std::string& text, const std::string& source) {
    auto po = o.parseOptions(baseDir);
    po.cluster = cluster;  // what {cluster} stands for; a declared `cluster` must be it
    return decl::parseOnThisNode(text, source, po);
  };
  a.fleet = std::move(f);
  return runAgentLocked(o, r, a);
}

}  // namespace

int runRun(CommonOptions& o, const RunOptions& r) {
  o.resolve();
  agent::AgentOptions a;
  a.interval = parseDuration(r.interval, "--interval");
  a.splay = parseDuration(r.splay, "--splay");
  if (a.interval.count() == 0) throw InputError("--interval {}: must be more than 0", r.interval);
  if (!r.etcd.empty()) return runFleetNode(o, r, a);
  const auto& c = r.etcdConnection;
  if (!c.cacert.empty() || !c.cert.empty() || !c.key.empty() || !c.user.empty() ||
      !c.passwordFile.empty())
    throw InputError(
        "--etcd-cacert, --etcd-cert, --etcd-key, --etcd-user and "
        "--etcd-password-file are for fleet mode: give --etcd URL too");
  a.declarationPath = r.declaration.empty()
                          ? (o.root == "/" ? "" : o.root) + "/etc/mesh-host/declaration.toml"
                          : std::filesystem::absolute(r.declaration).lexically_normal().string();
  const std::string declDir = parentOf(a.declarationPath);
  if (auto st = lstatPath(declDir); !st || !S_ISDIR(st->st_mode))
    throw InputError("--declaration {}: its directory {} does not exist; create it first",
                     a.declarationPath, declDir);

  return runAgentLocked(o, r, a);
}

}  // namespace mesh::cli
