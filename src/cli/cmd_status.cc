// `mesh-host status`: the node as the state store shows it.
#include <fmt/format.h>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "apply/process_info.hh"
#include "cli/commands.hh"
#include "state/store.hh"
#include "supervise/supervisor.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

namespace {

constexpr int64_t kChurnWindow = 10;  // cycles
constexpr int kChurnThreshold = 2;    // changes without a declared cause

struct Churn {
  int changes = 0;
  std::string lastReason;
};

bool isDeclaredCause(const std::string& reason) {
  return reason == "new" || reason == "declared";
}

std::map<std::string, Churn> churnByResource(state::Store& store, int64_t lastCycle) {
  std::map<std::string, Churn> out;
  for (const auto& h : store.history("", 100000)) {
    if (h.cycle <= lastCycle - kChurnWindow) continue;
    if (h.outcome != "created" && h.outcome != "updated") continue;
    if (isDeclaredCause(h.reason)) continue;
    auto& c = out[h.id];
    if (c.changes++ == 0) c.lastReason = h.reason;  // history is newest first
  }
  return out;
}

std::string isoTime(int64_t ms);

std::string serviceText(const std::map<std::string, nlohmann::json>& services,
                        const std::string& id) {
  auto it = services.find(id);
  if (it == services.end()) return "";
  const auto& s = it->second;
  return fmt::format(", {} {} pid {} since {}, restarts: {} by mesh-host, {} by crashes",
                     s["name"].get<std::string>(), s["state"].get<std::string>(),
                     s["pid"].get<int>(), s["since"].get<std::string>(),
                     s["restarts_by_mesh_host"].get<int64_t>(),
                     s["restarts_by_crash"].get<int64_t>());
}

std::string isoTime(int64_t ms) {
  if (ms == 0) return "";
  std::time_t t = ms / 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// For each process record, what its supervisor shows: read in one go.
std::map<std::string, nlohmann::json> servicesOf(
    const std::map<std::string, const state::Record*>& records, const CommonOptions& o) {
  std::map<std::string, apply::ProcessInfo> infos;
  std::vector<std::string> names;
  for (const auto& [id, r] : records)
    if (auto info = apply::processInfo(*r)) {
      names.push_back(info->service);
      infos.emplace(id, *info);
    }
  std::map<std::string, nlohmann::json> out;
  if (names.empty()) return out;
  std::map<std::string, supervise::ServiceState> states;
  std::string error;
  try {
    auto sup = supervise::openSupervisor(o.supervisor, {o.stateDir, "", o.unitDir, ""});
    states = sup->observe(names, /*detailed=*/true);
  } catch (const Error& e) {
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
    out.emplace(id, std::move(j));
  }
  return out;
}

}  // namespace

int runStatus(CommonOptions& o) {
  o.resolve();
  auto store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);
  const auto last = store.lastCycle();
  const int64_t lastCycle = last ? last->cycle : 0;
  const auto churn = churnByResource(store, lastCycle);
  auto records = store.loadRecords();
  std::map<std::string, const state::Record*> sorted;
  for (const auto& [id, r] : records) sorted.emplace(id, &r);

  const auto services = servicesOf(sorted, o);
  int failing = 0, churning = 0;
  nlohmann::json resources = nlohmann::json::array();
  std::vector<std::string> lines;
  for (const auto& [id, r] : sorted) {
    auto it = churn.find(id);
    const bool isChurning = it != churn.end() && it->second.changes >= kChurnThreshold;
    failing += r->outcome == "failed";
    churning += isChurning;
    resources.push_back({{"id", id},
                         {"module", r->module},
                         {"kind", r->kind},
                         {"outcome", r->outcome},
                         {"reason", r->reason},
                         {"wrote", r->wrote},
                         {"applied_at", last ? isoTime(last->finishedAt) : ""},
                         {"changed_at", isoTime(r->changedAt)},
                         {"changes", r->changes},
                         {"churning", isChurning},
                         {"service", services.count(id) ? services.at(id) : nlohmann::json()}});
    if (auto s = services.find(id);
        s != services.end() && !s->second["active"].get<bool>() && r->outcome != "failed") {
      ++failing;
      lines.push_back(fmt::format("down {} ({}): {} is {}", id, r->module,
                                  s->second["name"].get<std::string>(),
                                  s->second["state"].get<std::string>()));
    }
    if (r->outcome == "failed")
      lines.push_back(fmt::format("failed {} ({}): {}", id, r->module, r->reason));
    else if (isChurning)
      lines.push_back(fmt::format("churning {} ({}): changed {} times in the last {} cycles: {}",
                                  id, r->module, it->second.changes, kChurnWindow,
                                  it->second.lastReason));
    else if (o.verbose)
      lines.push_back(fmt::format("{} {} ({}): {}, changed {}{}", r->outcome, id, r->module,
                                  r->wrote.empty() ? "-" : r->wrote.substr(0, 19),
                                  isoTime(r->changedAt), serviceText(services, id)));
  }

  if (o.json) {
    nlohmann::json out = {
        {"node", o.node},
        {"cycles", store.cycleCount()},
        {"last_cycle", last ? nlohmann::json{{"cycle", last->cycle},
                                             {"started_at", isoTime(last->startedAt)},
                                             {"finished_at", isoTime(last->finishedAt)},
                                             {"ms", last->ms},
                                             {"created", last->created},
                                             {"updated", last->updated},
                                             {"unchanged", last->unchanged},
                                             {"removed", last->removed},
                                             {"failed", last->failed}}
                            : nlohmann::json(nullptr)},
        {"resources", std::move(resources)}};
    std::puts(out.dump().c_str());
  } else {
    for (const auto& l : lines) std::puts(l.c_str());
    std::puts(fmt::format("node {}: {} resource(s), last cycle {} at {} ({} ms): {} failing, {} "
                          "churning",
                          o.node, sorted.size(), lastCycle,
                          last ? isoTime(last->finishedAt) : "never", last ? last->ms : 0, failing,
                          churning)
                  .c_str());
  }
  return failing + churning > 0 ? kExitFailed : kExitOk;
}

}  // namespace mesh::cli
