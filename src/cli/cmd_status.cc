// `mesh-host status`: the node as the state store and the supervisor show it.
// Read-only: it opens the store SQLITE_OPEN_READONLY, so an operator in the
// state dir's group can run it; the store holds digests, never a secret.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "apply/churn.hh"
#include "apply/health.hh"
#include "apply/health_note.hh"
#include "apply/process_info.hh"
#include "cli/commands.hh"
#include "cli/output.hh"
#include "cli/time_text.hh"
#include "state/drift_note.hh"
#include "state/lock.hh"
#include "state/pause.hh"
#include "state/pending_note.hh"
#include "state/stop_note.hh"
#include "state/store.hh"
#include "supervise/supervisor.hh"
#include "util/error.hh"
#include "util/tally.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

void StatusOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--churn-threshold", churnThreshold,
                 "churning at this many changes the declaration did not ask for… (default 2)")
      ->check(CLI::PositiveNumber)
      ->option_text("N")
      ->default_str("2");
  cmd.add_option("--churn-window", churnWindow,
                 "…within the node's last this-many cycles (default 10)")
      ->check(CLI::PositiveNumber)
      ->option_text("CYCLES")
      ->default_str("10");
}

namespace {

// What the supervisor shows of one process record: built once, rendered as
// JSON and as text from the same fields.
struct ServiceView {
  std::string name;
  bool active = false;
  bool running = false;
  std::string state;  // the supervisor's word, or "unknown" when it cannot be asked
  pid_t pid = 0;      // 0 when none
  std::string since;  // when it entered its state; empty when unknown
  int64_t restartsByMeshHost = 0;
  int64_t restartsByCrash = 0;
  bool mustRun = true;  // not running is down (a `service` may be declared stopped)
  // Its declared health as the running agent last judged this run (apply/health_note.hh):
  // "" none declared or no agent runs, "starting", "healthy", "unhealthy".
  std::string health;
  std::string healthReason;
};

nlohmann::json serviceJson(const ServiceView& v) {
  return {{"name", v.name},
          {"active", v.active},
          {"running", v.running},
          {"state", v.state},
          {"pid", v.pid},
          {"since", v.since},
          {"restarts_by_mesh_host", v.restartsByMeshHost},
          {"restarts_by_crash", v.restartsByCrash},
          {"health", v.health},
          {"health_reason", v.healthReason}};
}

std::string healthText(const ServiceView& v) {
  if (v.health.empty()) return "";
  return ", health " + v.health +
         (v.healthReason.empty() ? "" : " (" + shownText(v.healthReason) + ")");
}

std::string sinceText(const ServiceView& v) {
  return v.since.empty() ? std::string() : " since " + v.since;
}

std::string serviceText(const ServiceView& v) {
  return fmt::format(", {} {}{}{}, restarts: {} by mesh-host, {} by crashes{}", v.name, v.state,
                     v.pid > 0 ? fmt::format(" pid {}", v.pid) : std::string(), sinceText(v),
                     v.restartsByMeshHost, v.restartsByCrash, healthText(v));
}

// Every process record's service, and the error when the supervisor could not
// be asked at all (then no service is known to run, and the node is failing).
struct Services {
  std::map<std::string, ServiceView> views;
  std::string error;
};

// For each process record, what its supervisor shows: read in one go.
Services servicesOf(const std::map<std::string, const state::Record*>& records,
                    const CommonOptions& o) {
  std::map<std::string, apply::ProcessInfo> infos;
  std::vector<std::string> names;
  for (const auto& [id, r] : records)
    if (auto info = r->kind == "service" ? apply::serviceInfo(*r) : apply::processInfo(*r)) {
      names.push_back(info->service);
      infos.emplace(id, *info);
    }
  Services out;
  if (names.empty()) return out;
  std::map<std::string, supervise::ServiceState> states;
  try {
    auto sup = supervise::openSupervisor(o.supervisor, {o.stateDir, "", o.unitDir, ""});
    states = sup->observe(names, /*detailed=*/true);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  // The health the running agent judged (none when no agent runs: nobody checks).
  std::optional<apply::HealthNote> note = apply::healthNote(o.stateDir);
  if (note) {
    const auto agent = state::agentRunning(o.stateDir, note->pid);
    if (!agent || !agent->running) note.reset();
  }
  for (const auto& [id, info] : infos) {
    const auto& st = states[info.service];
    const bool known = out.error.empty();
    std::string health, healthReason;
    if (note && known)
      if (auto h = note->services.find(id); h != note->services.end()) {
        // A run the agent has not judged yet (it looks every few seconds) is starting.
        const bool same = h->second.runSinceUs == (st.running ? st.sinceUs : 0);
        health = same ? h->second.health : "starting";
        healthReason = same ? h->second.reason : "";
      }
    out.views.emplace(id, ServiceView{
                              .name = info.service,
                              .active = st.active,
                              .running = st.running,
                              .state = known ? st.activeState : std::string("unknown"),
                              .pid = st.pid,
                              .since = st.sinceUs ? isoTime(st.sinceUs / 1000) : "",
                              .restartsByMeshHost = info.restarts,
                              // Counted for ever, as mesh-host's own: what the record kept
                              // from before mesh-host's last (re)start, and the count since.
                              .restartsByCrash = info.crashRestartsBefore + st.crashRestarts,
                              .mustRun = info.mustRun,
                              .health = health,
                              .healthReason = healthReason,
                          });
  }
  return out;
}

nlohmann::json lastCycleJson(const std::optional<state::Cycle>& last) {
  if (!last) return nullptr;
  nlohmann::json j = {{"cycle", last->cycle},
                      {"started_at", isoTime(last->startedAt)},
                      {"finished_at", isoTime(last->finishedAt)},
                      {"ms", last->ms},
                      {"generation", last->generation}};
  j.update(tallyJson(last->tally));
  return j;
}

nlohmann::json cycleErrorJson(const std::optional<state::CycleError>& e) {
  if (!e) return nullptr;
  return {{"at", isoTime(e->at)}, {"message", e->message}};
}

std::string cycleErrorLine(const state::CycleError& e) {
  return fmt::format("error: the last cycle could not run ({}): {}", isoTime(e.at), e.message);
}

// The agent's drift watch: null when no agent runs (the note goes with it).
nlohmann::json driftWatchJson(const std::optional<state::DriftNote>& n) {
  if (!n) return nullptr;
  return {{"watched_dirs", n->watchedDirs},
          {"unwatched", n->unwatched},
          {"repairs", n->repairs},
          {"backoff_ms", n->backoffMs}};
}

// A drift note whose agent is gone (killed: it could not remove it): not a watch.
std::string staleDriftWatchLine(const state::DriftNote& n) {
  return fmt::format(
      "drift watch: none: the agent that kept it{} is not running (killed or crashed; its note "
      "of {} stays until an agent starts)",
      n.pid > 0 ? fmt::format(" (pid {})", n.pid) : std::string(), isoTime(n.at));
}

// The drift note, when the agent that writes it runs; nullopt otherwise (and in
// `stale`, a note a dead agent left). Read from /proc/locks: no lock is taken.
std::optional<state::DriftNote> liveDriftNote(const std::string& stateDir,
                                              std::optional<state::DriftNote>* stale) {
  auto note = state::driftNote(stateDir);
  if (!note) return note;
  const auto seen = state::agentRunning(stateDir, note->pid);
  if (!seen || seen->running) return note;  // cannot tell: as noted
  *stale = std::move(note);
  return std::nullopt;
}

std::string driftWatchLine(const state::DriftNote& n) {
  std::string line =
      fmt::format("drift watch: {} director{} watched, {} repair{} by event", n.watchedDirs,
                  n.watchedDirs == 1 ? "y" : "ies", n.repairs, n.repairs == 1 ? "" : "s");
  if (n.unwatched)
    line += fmt::format(
        "; {} resource(s) not watched (the watch limit?): repaired at the "
        "interval only",
        n.unwatched);
  if (n.backoffMs)
    line += fmt::format("; backing off {} ms: an outside writer fights a repair", n.backoffMs);
  return line;
}

nlohmann::json declarationErrorJson(const std::optional<state::DeclarationError>& e) {
  if (!e) return nullptr;
  return {{"at", isoTime(e->at)},
          {"path", e->path},
          {"message", e->message},
          {"kept_last_good", e->keptLastGood}};
}

std::string declarationErrorLine(const state::DeclarationError& e) {
  return fmt::format("error: the declaration {} does not load (since {}); {}: {}", e.path,
                     isoTime(e.at),
                     e.keptLastGood ? "the agent keeps the last good one in force"
                                    : "the agent applies nothing until it is fixed",
                     e.message);
}

// The newest cycle row when it has not finished: one running now (another
// mesh-host holds the state lock) or one cut short — the agent was asked to stop
// in it (`stopped`: its note names this very cycle), or mesh-host died in it.
struct Unfinished {
  state::Cycle cycle;
  bool running = false;
  std::optional<state::CycleStop> stopped;
};

nlohmann::json stoppedJson(const std::optional<state::CycleStop>& s) {
  if (!s) return nullptr;
  return {{"signal", s->signal.empty() ? nlohmann::json() : nlohmann::json(s->signal)},
          {"at", isoTime(s->at)}};
}

std::string stoppedLine(const state::Cycle& c, const state::CycleStop& s) {
  return fmt::format(
      "unfinished: cycle {} (started {}) was stopped before it finished: the agent was asked to "
      "stop{} at {}; the next cycle completes what it began",
      c.cycle, isoTime(c.startedAt), s.signal.empty() ? "" : " (" + s.signal + ")", isoTime(s.at));
}

std::optional<Unfinished> unfinishedCycle(state::Store& store, const std::string& stateDir) {
  // Read under the shared lock when it is free, so that a cycle that ends
  // meanwhile is not taken for one cut short; released at once.
  std::optional<state::StateLock> lock;
  bool lockHeld = false;
  try {
    lock = state::StateLock::tryAcquire(stateDir, state::StateLock::Kind::Shared);
    lockHeld = !lock;
  } catch (const std::exception&) {
    lockHeld = true;  // cannot tell: do not call it cut short
  }
  auto newest = store.lastCycle();
  lock.reset();
  if (!newest || newest->finishedAt != 0) return std::nullopt;
  Unfinished u{*newest, lockHeld, std::nullopt};
  if (auto stop = state::cycleStopped(stateDir); stop && stop->cycle == newest->cycle)
    u.stopped = std::move(stop);
  return u;
}

// `status --json`'s summary, as `apply --json` has one: how many resources, how many
// of them had each outcome last (the seven keys always there), and the health counts.
nlohmann::json summaryJson(const std::map<std::string, const state::Record*>& records,
                           const apply::NodeHealth& health) {
  nlohmann::json j = nlohmann::json::object();
  j["resources"] = records.size();
  for (const auto& [name, n] : Tally{}.named()) j[std::string(name)] = n;
  for (const auto& [id, r] : records)
    if (j.contains(r->outcome)) j[r->outcome] = j[r->outcome].get<int64_t>() + 1;
  j["failing"] = health.failing;
  j["churning"] = health.churning;
  j["healthy"] = health.healthy();
  return j;
}

// What the running agent's last cycle that only planned would change; nullopt when
// none, or when the agent that noted it is gone.
std::optional<state::PendingNote> livePendingNote(const std::string& stateDir) {
  auto note = state::pendingNote(stateDir);
  if (!note) return note;
  const auto seen = state::agentRunning(stateDir, note->pid);
  if (seen && !seen->running) return std::nullopt;
  return note;
}

nlohmann::json pendingJson(const std::optional<state::PendingNote>& n) {
  if (!n) return nullptr;
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : n->changes)
    changes.push_back({{"id", c.id}, {"outcome", c.outcome}, {"reason", c.reason}});
  return {{"why", n->why},
          {"planned_at", isoTime(n->at)},
          {"changes", std::move(changes)},
          {"failed", n->failed}};
}

std::vector<std::string> pendingLines(const state::PendingNote& n) {
  std::vector<std::string> out;
  out.push_back(fmt::format("pending ({}, planned {}): {} change(s) not applied{}",
                            n.why == "noop" ? "run --noop" : n.why, isoTime(n.at), n.changes.size(),
                            n.failed ? fmt::format(", {} would fail", n.failed) : ""));
  for (const auto& c : n.changes)
    out.push_back(fmt::format("  would be {} {}: {}", c.outcome, c.id, c.reason));
  return out;
}

std::string pausedLine(const state::Pause& p) {
  return state::pauseText(p) +
         "; the agent's cycles only plan, apply refuses without --force (mesh-host resume)";
}

// The status the store shows, with the error of a cycle that could not run and
// the agent's declaration that does not load.
int showStatus(CommonOptions& o, const StatusOptions& so,
               const std::optional<state::CycleError>& cycleError,
               const std::optional<state::DeclarationError>& declarationError,
               const std::optional<state::Pause>& paused) {
  const auto pending = livePendingNote(o.stateDir);
  auto store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);
  // The name the node's cycles ran as (--node), unless one is given here.
  const std::string node = o.nodeFromHostname ? store.nodeName().value_or(o.node) : o.node;
  const auto unfinished = unfinishedCycle(store, o.stateDir);
  const auto last = store.lastFinishedCycle();
  const int64_t newestCycle = unfinished ? unfinished->cycle.cycle : last ? last->cycle : 0;
  const apply::ChurnPolicy policy{so.churnThreshold, so.churnWindow};
  const auto churn = apply::computeChurn(store.history("", 0), newestCycle, policy);
  const auto records = store.loadRecords();
  std::map<std::string, const state::Record*> sorted;
  for (const auto& [id, r] : records) sorted.emplace(id, &r);

  const auto services = servicesOf(sorted, o);
  apply::NodeHealth health;
  nlohmann::json resources = nlohmann::json::array();
  std::vector<std::string> lines;
  for (const auto& [id, r] : sorted) {
    const auto c = churn.count(id) ? churn.at(id) : apply::Churn{};
    const auto s = services.views.find(id);
    // A supervisor that cannot be asked fails the node once, below.
    const auto h = apply::resourceHealth(
        r->outcome,
        s != services.views.end() && services.error.empty() && s->second.mustRun
            ? std::optional<bool>(s->second.running)
            : std::nullopt,
        s != services.views.end() ? s->second.health : "");
    const bool failed = h.failed, down = h.down;
    health.add(h);
    health.churning += c.churning;
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [reason, n] : c.reasons) reasons[reason] = n;
    resources.push_back(
        {{"id", id},
         {"module", r->module},
         {"kind", r->kind},
         {"path", r->path.empty() ? nlohmann::json() : nlohmann::json(r->path)},
         {"outcome", r->outcome},
         {"reason", r->reason},
         {"wrote", r->wrote},
         {"applied_at", last ? isoTime(last->finishedAt) : ""},
         {"changed_at", isoTime(r->changedAt)},
         {"changed_cycle", r->changedCycle},
         {"changes", r->changes},  // ever
         {"churning", c.churning},
         // The changes the declaration did not ask for, in the window.
         {"churn", {{"changes", c.changes}, {"reasons", std::move(reasons)}}},
         {"service", s != services.views.end() ? serviceJson(s->second) : nlohmann::json()}});
    if (down)
      lines.push_back(fmt::format("down {} ({}): {} is {}{}", id, r->module, s->second.name,
                                  s->second.state, sinceText(s->second)));
    if (failed) lines.push_back(fmt::format("failed {} ({}): {}", id, r->module, r->reason));
    if (h.unhealthy)
      lines.push_back(fmt::format("unhealthy {} ({}): {} runs, its health check fails: {}", id,
                                  r->module, s->second.name, shownText(s->second.healthReason)));
    if (c.churning)
      lines.push_back(fmt::format("churning {} ({}): changed {} times in the last {} cycles ({})",
                                  id, r->module, c.changes, policy.window, c.reasonText()));
    if (o.verbose && !failed && !down && !h.unhealthy && !c.churning)
      lines.push_back(fmt::format("{} {} ({}): {}, changed {}{}", r->outcome, id, r->module,
                                  r->wrote.empty() ? "-" : r->wrote.substr(0, 19),
                                  isoTime(r->changedAt),
                                  s != services.views.end() ? serviceText(s->second) : ""));
  }
  const bool cutShort = unfinished && !unfinished->running;
  // The unfinished cycle failed (its error is noted since it began), rather than
  // being killed: the note says why.
  const bool failedInIt = cutShort && cycleError && cycleError->at >= unfinished->cycle.startedAt;
  std::optional<state::DriftNote> staleDrift;
  const auto drift = liveDriftNote(o.stateDir, &staleDrift);
  health.cycleError = cycleError.has_value();
  health.declarationError = declarationError.has_value();
  health.supervisorError = !services.error.empty();
  health.cutShort = cutShort;
  const std::string supervisorError =
      services.error.empty() ? ""
                             : fmt::format("the supervisor cannot be reached: {}", services.error);

  if (o.json) {
    nlohmann::json running, interrupted;
    if (unfinished) {
      nlohmann::json c = nlohmann::json::object();
      c["cycle"] = unfinished->cycle.cycle;
      c["started_at"] = isoTime(unfinished->cycle.startedAt);
      c["generation"] = unfinished->cycle.generation;
      if (unfinished->running) {
        running = std::move(c);
      } else {
        // Stopped on request (null: killed or crashed).
        c["stopped"] = stoppedJson(unfinished->stopped);
        interrupted = std::move(c);
      }
    }
    nlohmann::json out = {
        {"schema", kJsonSchema},
        {"node", node},
        {"cycles", store.cycleCount()},
        {"last_cycle", lastCycleJson(last)},
        {"running_cycle", std::move(running)},
        {"interrupted_cycle", std::move(interrupted)},
        {"churn", {{"threshold", policy.threshold}, {"window", policy.window}}},
        {"failing", health.failing},
        {"churning", health.churning},
        {"last_error", cycleErrorJson(cycleError)},
        {"declaration_error", declarationErrorJson(declarationError)},
        {"supervisor_error",
         supervisorError.empty() ? nlohmann::json() : nlohmann::json(supervisorError)},
        {"drift_watch", driftWatchJson(drift)},
        {"paused", pauseJson(paused)},
        {"pending", pendingJson(pending)},
        {"summary", summaryJson(sorted, health)},
        {"resources", std::move(resources)}};
    std::puts(jsonOut(out).c_str());
  } else {
    if (paused) printLine(pausedLine(*paused));
    if (cycleError && !failedInIt) printLine(cycleErrorLine(*cycleError));
    if (declarationError) printLine(declarationErrorLine(*declarationError));
    if (!supervisorError.empty()) printLine(("error: " + supervisorError));
    if (failedInIt)
      printLine(
          fmt::format("error: cycle {} (started {}) could not finish ({}): {}; the next "
                      "cycle completes what it began",
                      unfinished->cycle.cycle, isoTime(unfinished->cycle.startedAt),
                      isoTime(cycleError->at), cycleError->message));
    else if (cutShort && unfinished->stopped)
      printLine(stoppedLine(unfinished->cycle, *unfinished->stopped));
    else if (cutShort)
      printLine(
          fmt::format("error: cycle {} (started {}) never finished: mesh-host was killed or "
                      "crashed in it; the next cycle completes what it began",
                      unfinished->cycle.cycle, isoTime(unfinished->cycle.startedAt)));
    for (const auto& l : lines) printLine(l);
    if (drift) printLine(driftWatchLine(*drift));
    if (staleDrift) printLine(staleDriftWatchLine(*staleDrift));
    if (pending)
      for (const auto& l : pendingLines(*pending)) printLine(l);
    std::string running;
    if (unfinished && unfinished->running)
      running = fmt::format("; cycle {} running since {}", unfinished->cycle.cycle,
                            isoTime(unfinished->cycle.startedAt));
    printLine(fmt::format(
        "node {}: {} resource(s), last cycle {} at {} ({} ms): {} failing, {} "
        "churning{}",
        node, sorted.size(), last ? last->cycle : 0, last ? isoTime(last->finishedAt) : "never",
        last ? last->ms : 0, health.failing, health.churning, running));
  }
  return health.healthy() ? kExitOk : kExitFailed;
}

}  // namespace

int runStatus(CommonOptions& o, const StatusOptions& so) {
  o.resolve();
  // A cycle that could not start (its store cannot be opened, or is damaged)
  // leaves no cycle row; its error waits in <state-dir>/last-error until a cycle
  // finishes, and makes the node failing.
  const auto cycleError = state::lastCycleError(o.stateDir);
  const auto declarationError = state::declarationError(o.stateDir);
  // Unreadable (another user's state dir?): the store's error says more below.
  std::optional<state::Pause> paused;
  try {
    paused = state::readPause(o.stateDir);
  } catch (const Error&) {
  }
  if (!cycleError && !declarationError && !paused)
    return showStatus(o, so, cycleError, declarationError, paused);
  try {
    return showStatus(o, so, cycleError, declarationError, paused);
  } catch (const std::exception& e) {
    // Reading the store may fail for the same reason: still say what the cycle
    // met, and what is wrong with the declaration.
    if (o.json) {
      nlohmann::json out = {{"schema", kJsonSchema},
                            {"node", o.node},
                            {"last_error", cycleErrorJson(cycleError)},
                            {"declaration_error", declarationErrorJson(declarationError)},
                            {"paused", pauseJson(paused)},
                            {"store_error", e.what()}};
      std::puts(jsonOut(out).c_str());
    } else {
      if (paused) printLine(pausedLine(*paused));
      if (cycleError) printLine(cycleErrorLine(*cycleError));
      if (declarationError) printLine(declarationErrorLine(*declarationError));
      if (!cycleError || e.what() != cycleError->message)
        printLines(fmt::format("mesh-host: {}\n", e.what()), stderr);
    }
    return kExitFailed;
  }
}

}  // namespace mesh::cli
