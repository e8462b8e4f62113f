// `mesh-host status`: the node as the state store shows it.
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "cli/commands.hh"
#include "state/store.hh"
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

std::string isoTime(int64_t ms) {
  if (ms == 0) return "";
  std::time_t t = ms / 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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
                         {"service", nullptr}});
    if (r->outcome == "failed")
      lines.push_back(fmt::format("failed {} ({}): {}", id, r->module, r->reason));
    else if (isChurning)
      lines.push_back(fmt::format("churning {} ({}): changed {} times in the last {} cycles: {}", id,
                                  r->module, it->second.changes, kChurnWindow,
                                  it->second.lastReason));
    else if (o.verbose)
      lines.push_back(fmt::format("{} {} ({}): {}, changed {}", r->outcome, id, r->module,
                                  r->wrote.empty() ? "-" : r->wrote.substr(0, 19),
                                  isoTime(r->changedAt)));
  }

  if (o.json) {
    nlohmann::json out = {{"node", o.node},
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
