// `mesh-host history [ID]`: what each cycle did, newest first, and for one
// resource what mesh-host keeps to give back. Read-only, like status: the store
// holds digests (keyed ones for credentials), never a secret.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "apply/originals.hh"
#include "cli/commands.hh"
#include "cli/output.hh"
#include "cli/time_text.hh"
#include "state/store.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

void HistoryOptions::addTo(CLI::App& cmd) {
  cmd.add_option("ID", id, "only this resource (<module>.<name>)");
  cmd.add_option("--limit", limit, "show at most N cycles, 0: every one kept (default 50)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("N")
      ->default_str("50");
}

namespace {

std::string shortDigest(const std::string& d) {
  return d.empty() ? "-" : d.substr(0, 19);
}

nlohmann::json entryJson(const state::HistoryEntry& h) {
  return {{"id", h.id},     {"outcome", h.outcome}, {"reason", h.reason},
          {"want", h.want}, {"wrote", h.wrote},     {"at", isoTime(h.at)}};
}

std::string entryLine(const state::HistoryEntry& h) {
  std::string line = fmt::format("  {} {}", h.outcome, h.id);
  if (!h.reason.empty()) line += ": " + h.reason;
  if (h.outcome != "removed" && h.outcome != "released" && h.outcome != "failed" &&
      h.outcome != "skipped")
    line += " → " + shortDigest(h.wrote);
  return line;
}

std::string cycleLine(const state::Cycle& c) {
  std::string line =
      fmt::format("cycle {} at {} (generation {}", c.cycle, isoTime(c.startedAt), c.generation);
  if (c.finishedAt == 0)
    line += ", unfinished";
  else
    line += fmt::format(", {} ms", c.ms);
  return line + "): " + tallyText(c.tally);
}

// What mesh-host keeps to give back for one resource (apply/originals.hh): shown
// with `history ID`, to whoever may read it (it is root-only).
std::optional<apply::Original> keptOf(const CommonOptions& o, const std::string& id) {
  if (id.empty()) return std::nullopt;
  auto kept = apply::readOriginal(o.stateDir, id);
  if (!kept || kept->type == apply::Original::Type::Nothing) return std::nullopt;
  return kept;
}

}  // namespace

int runHistory(CommonOptions& o, const HistoryOptions& h) {
  o.resolve();
  auto store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);
  // Entries by cycle, each cycle's in the order they happened.
  std::map<int64_t, std::vector<state::HistoryEntry>, std::greater<>> byCycle;
  for (auto& e : store.history(h.id, 0)) byCycle[e.cycle].insert(byCycle[e.cycle].begin(), e);

  std::vector<state::Cycle> cycles;
  if (h.id.empty()) {
    cycles = store.cycles(h.limit);
  } else {
    // One resource: only the cycles that did something to it.
    std::map<int64_t, state::Cycle> all;
    for (auto& c : store.cycles(0)) all.emplace(c.cycle, c);
    for (const auto& [cycle, entries] : byCycle) {
      if (h.limit > 0 && static_cast<int64_t>(cycles.size()) >= h.limit) break;
      auto it = all.find(cycle);
      cycles.push_back(it != all.end() ? it->second : state::Cycle{.cycle = cycle, .tally = {}});
    }
  }
  const int64_t last = store.lastCycle() ? store.lastCycle()->cycle : 0;
  const int64_t oldestKept = last - state::Store::kHistoryCycles + 1;
  // Cycles before the oldest row were trimmed (numbers are never reused).
  const int64_t oldestCycle = store.oldestCycle().value_or(1);
  const std::string cyclesKept = store.lastRetention().value_or(o.retention).cyclesText();

  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : cycles) {
      nlohmann::json outcomes = nlohmann::json::array();
      if (auto it = byCycle.find(c.cycle); it != byCycle.end())
        for (const auto& e : it->second) outcomes.push_back(entryJson(e));
      list.push_back({{"cycle", c.cycle},
                      {"started_at", isoTime(c.startedAt)},
                      {"finished_at", isoTime(c.finishedAt)},
                      {"generation", c.generation},
                      {"ms", c.ms},
                      {"summary", tallyJson(c.tally)},
                      {"history_kept", c.cycle >= oldestKept},
                      {"outcomes", std::move(outcomes)}});
    }
    nlohmann::json out = {{"schema", kJsonSchema}, {"node", o.node}, {"cycles", std::move(list)}};
    out["oldest_cycle_kept"] = oldestCycle;
    if (oldestCycle > 1) out["trimmed"] = {{"before_cycle", oldestCycle}, {"kept", cyclesKept}};
    if (!h.id.empty()) out["id"] = h.id;
    if (const auto kept = keptOf(o, h.id))
      out["kept"] = {{"what", kept->describe()},
                     {"path", kept->path},
                     {"kind", kept->kind},
                     {"on_remove", decl::onRemoveName(kept->onRemove)},
                     {"bytes", kept->bytes}};
    std::puts(jsonOut(out).c_str());
    return kExitOk;
  }

  if (cycles.empty())
    printLine(h.id.empty() ? "no cycle has run yet"
                           : fmt::format("no change to {} in the history kept (the last {} cycles)",
                                         h.id, state::Store::kHistoryCycles));
  for (const auto& c : cycles) {
    printLine(cycleLine(c));
    if (auto it = byCycle.find(c.cycle); it != byCycle.end())
      for (const auto& e : it->second) printLine(entryLine(e));
    else if (c.cycle < oldestKept)
      std::puts("  (outcomes no longer kept)");
  }
  if (oldestCycle > 1 && (cycles.empty() || cycles.back().cycle <= oldestCycle || h.limit <= 0 ||
                          static_cast<int64_t>(cycles.size()) < h.limit))
    printLine(fmt::format("cycles before {} were trimmed (kept: {})", oldestCycle, cyclesKept));
  if (const auto kept = keptOf(o, h.id)) {
    const std::string where = kept->path.empty() ? "" : " at " + shownText(kept->path);
    if (kept->kind == decl::kindName(decl::Kind::Absent))
      printLine(
          fmt::format("kept: {}{}, what the absent removed (a rollback to a generation "
                      "before it puts it back)",
                      kept->describe(), where));
    else if (!kept->restorable())
      printLine(
          fmt::format("kept: nothing{}: {}; nothing will be given back", where, kept->describe()));
    else
      printLine(
          fmt::format("kept: {}{}, what was there before mesh-host first wrote (on-remove "
                      "= \"{}\": {})",
                      kept->describe(), where, decl::onRemoveName(kept->onRemove),
                      kept->onRemove == decl::OnRemove::Restore ? "put back when undeclared"
                      : kept->onRemove == decl::OnRemove::Keep  ? "left as it is when undeclared"
                                                                : "deleted when undeclared"));
  }
  return kExitOk;
}

}  // namespace mesh::cli
