// `mesh-host status`: the node as the state store and the supervisor show it.
// Read-only: it opens the store SQLITE_OPEN_READONLY, so an operator in the
// state dir's group can run it; the store holds digests, never a secret.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "apply/churn.hh"
#include "apply/process_info.hh"
#include "cli/commands.hh"
#include "cli/time_text.hh"
#include "state/store.hh"
#include "supervise/supervisor.hh"
#include "util/error.hh"

namespace mesh::cli {

void StatusOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--churn-threshold", churnThreshold,
                 "churning at this many changes the declaration did not ask for…")
      ->check(CLI::PositiveNumber)
      ->option_text("N")
      ->default_str("2");
  cmd.add_option("--churn-window", churnWindow, "…within the node's last this-many cycles")
      ->check(CLI::PositiveNumber)
      ->option_text("CYCLES")
      ->default_str("10");
}

namespace {

// What the supervisor shows of one process record.
struct ServiceView {
  nlohmann::json json;
  bool observed = false;  // false: the supervisor could not be asked (say, no permission)
  bool down() const { return observed && !json["active"].get<bool>(); }
};

std::string serviceText(const ServiceView& v) {
  const auto& s = v.json;
  return fmt::format(", {} {} pid {} since {}, restarts: {} by mesh-host, {} by crashes",
                     s["name"].get<std::string>(), s["state"].get<std::string>(),
                     s["pid"].get<int>(), s["since"].get<std::string>(),
                     s["restarts_by_mesh_host"].get<int64_t>(),
                     s["restarts_by_crash"].get<int64_t>());
}

// For each process record, what its supervisor shows: read in one go. A
// supervisor that cannot be asked (an operator without access to it) leaves the
// services "unknown", not down.
std::map<std::string, ServiceView> servicesOf(
    const std::map<std::string, const state::Record*>& records, const CommonOptions& o) {
  std::map<std::string, apply::ProcessInfo> infos;
  std::vector<std::string> names;
  for (const auto& [id, r] : records)
    if (auto info = apply::processInfo(*r)) {
      names.push_back(info->service);
      infos.emplace(id, *info);
    }
  std::map<std::string, ServiceView> out;
  if (names.empty()) return out;
  std::map<std::string, supervise::ServiceState> states;
  std::string error;
  try {
    auto sup = supervise::openSupervisor(o.supervisor, {o.stateDir, "", o.unitDir, ""});
    states = sup->observe(names, /*detailed=*/true);
  } catch (const std::exception& e) {
    error = e.what();
  }
  for (const auto& [id, info] : infos) {
    const auto& st = states[info.service];
    nlohmann::json j = {{"name", info.service},
                        {"active", st.active},
                        {"state", error.empty() ? st.activeState : "unknown: " + error},
                        {"pid", st.pid},
                        {"since", st.sinceUs ? isoTime(st.sinceUs / 1000) : ""},
                        {"restarts_by_mesh_host", info.restarts},
                        {"restarts_by_crash", st.crashRestarts}};
    out.emplace(id, ServiceView{std::move(j), error.empty()});
  }
  return out;
}

nlohmann::json lastCycleJson(const std::optional<state::Cycle>& last) {
  if (!last) return nullptr;
  return {{"cycle", last->cycle},
          {"started_at", isoTime(last->startedAt)},
          {"finished_at", isoTime(last->finishedAt)},
          {"ms", last->ms},
          {"generation", last->generation},
          {"created", last->created},
          {"updated", last->updated},
          {"unchanged", last->unchanged},
          {"removed", last->removed},
          {"failed", last->failed}};
}

nlohmann::json cycleErrorJson(const std::optional<state::CycleError>& e) {
  if (!e) return nullptr;
  return {{"at", isoTime(e->at)}, {"message", e->message}};
}

std::string cycleErrorLine(const state::CycleError& e) {
  return fmt::format("error: the last cycle could not run ({}): {}", isoTime(e.at), e.message);
}

// The status the store shows, with the error of a cycle that could not run.
int showStatus(CommonOptions& o, const StatusOptions& so,
               const std::optional<state::CycleError>& cycleError) {
  auto store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);
  const auto last = store.lastCycle();
  const int64_t lastCycle = last ? last->cycle : 0;
  const apply::ChurnPolicy policy{so.churnThreshold, so.churnWindow};
  const auto churn = apply::computeChurn(store.history("", 0), lastCycle, policy);
  const auto records = store.loadRecords();
  std::map<std::string, const state::Record*> sorted;
  for (const auto& [id, r] : records) sorted.emplace(id, &r);

  const auto services = servicesOf(sorted, o);
  int failing = 0, churning = 0;
  nlohmann::json resources = nlohmann::json::array();
  std::vector<std::string> lines;
  for (const auto& [id, r] : sorted) {
    const auto c = churn.count(id) ? churn.at(id) : apply::Churn{};
    const auto s = services.find(id);
    const bool failed = r->outcome == "failed";
    const bool down = s != services.end() && s->second.down() && !failed;
    failing += failed || down;
    churning += c.churning;
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [reason, n] : c.reasons) reasons[reason] = n;
    resources.push_back({{"id", id},
                         {"module", r->module},
                         {"kind", r->kind},
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
                         {"service", s != services.end() ? s->second.json : nlohmann::json()}});
    if (down)
      lines.push_back(fmt::format("down {} ({}): {} is {}", id, r->module,
                                  s->second.json["name"].get<std::string>(),
                                  s->second.json["state"].get<std::string>()));
    if (failed) lines.push_back(fmt::format("failed {} ({}): {}", id, r->module, r->reason));
    if (c.churning)
      lines.push_back(fmt::format("churning {} ({}): changed {} times in the last {} cycles ({})",
                                  id, r->module, c.changes, policy.window, c.reasonText()));
    if (o.verbose && !failed && !down && !c.churning)
      lines.push_back(fmt::format("{} {} ({}): {}, changed {}{}", r->outcome, id, r->module,
                                  r->wrote.empty() ? "-" : r->wrote.substr(0, 19),
                                  isoTime(r->changedAt),
                                  s != services.end() ? serviceText(s->second) : ""));
  }

  if (o.json) {
    nlohmann::json out = {{"node", o.node},
                          {"cycles", store.cycleCount()},
                          {"last_cycle", lastCycleJson(last)},
                          {"churn", {{"threshold", policy.threshold}, {"window", policy.window}}},
                          {"failing", failing},
                          {"churning", churning},
                          {"last_error", cycleErrorJson(cycleError)},
                          {"resources", std::move(resources)}};
    std::puts(out.dump().c_str());
  } else {
    if (cycleError) std::puts(cycleErrorLine(*cycleError).c_str());
    for (const auto& l : lines) std::puts(l.c_str());
    std::puts(fmt::format("node {}: {} resource(s), last cycle {} at {} ({} ms): {} failing, {} "
                          "churning",
                          o.node, sorted.size(), lastCycle,
                          last ? isoTime(last->finishedAt) : "never", last ? last->ms : 0, failing,
                          churning)
                  .c_str());
  }
  return failing + churning > 0 || cycleError ? kExitFailed : kExitOk;
}

}  // namespace

int runStatus(CommonOptions& o, const StatusOptions& so) {
  o.resolve();
  // A cycle that could not start (its store cannot be opened, or is damaged)
  // leaves no cycle row; its error waits in <state-dir>/last-error until a cycle
  // finishes, and makes the node failing.
  const auto cycleError = state::lastCycleError(o.stateDir);
  if (!cycleError) return showStatus(o, so, cycleError);
  try {
    return showStatus(o, so, cycleError);
  } catch (const std::exception& e) {
    // Reading the store may fail for the same reason: still say what the cycle met.
    if (o.json) {
      nlohmann::json out = {
          {"node", o.node}, {"last_error", cycleErrorJson(cycleError)}, {"store_error", e.what()}};
      std::puts(out.dump().c_str());
    } else {
      std::puts(cycleErrorLine(*cycleError).c_str());
      if (e.what() != cycleError->message) std::fprintf(stderr, "mesh-host: %s\n", e.what());
    }
    return kExitFailed;
  }
}

}  // namespace mesh::cli
