#include "apply/churn.hh"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace mesh::apply {

namespace {

bool isChange(const std::string& outcome) {
  return outcome == "created" || outcome == "updated";
}

// The ids a pure restart-on or reload-on reason names: "restart-on a, b",
// "reload-on c", "restart-on a; reload-on c" (possibly followed by "; owed
// restart: …" or "; owed reload: …"). Empty when the reason has any other cause.
std::vector<std::string> restartOnCauses(const std::string& reason) {
  std::vector<std::string> ids;
  size_t at = 0;
  for (bool first = true; at < reason.size(); first = false) {
    size_t end = reason.find("; ", at);
    if (end == std::string::npos) end = reason.size();
    const std::string part = reason.substr(at, end - at);
    at = end + 2;
    std::string list;
    for (std::string_view prefix : {"restart-on ", "reload-on "})
      if (part.rfind(prefix, 0) == 0) list = part.substr(prefix.size());
    if (list.empty()) {
      if (first) return {};
      continue;  // "owed restart: …": its cause was counted when it changed
    }
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t comma = list.find(", ", pos);
      if (comma == std::string::npos) comma = list.size();
      if (comma > pos) ids.push_back(list.substr(pos, comma - pos));
      pos = comma + 2;
    }
  }
  return ids;
}

}  // namespace

std::string Churn::reasonText() const {
  std::string out;
  for (const auto& [reason, n] : reasons)
    out += fmt::format("{}{} ×{}", out.empty() ? "" : ", ", reason.empty() ? "-" : reason, n);
  return out;
}

bool isUndeclaredChange(const state::HistoryEntry& h, bool hasPrevious,
                        const std::string& previousWant) {
  if (!isChange(h.outcome)) return false;
  if (hasPrevious) return !h.want.empty() && h.want == previousWant;
  // Nothing older is known (first appearance, or history trimmed): trust the reason.
  return h.reason != "new" && h.reason != "declared" && h.reason != "adopted";
}

std::map<std::string, Churn> computeChurn(const std::vector<state::HistoryEntry>& newestFirst,
                                          int64_t lastCycle, const ChurnPolicy& policy) {
  // Each resource's entries, oldest first, so each can be compared with the one before.
  std::map<std::string, std::vector<const state::HistoryEntry*>> byId;
  for (auto it = newestFirst.rbegin(); it != newestFirst.rend(); ++it) byId[it->id].push_back(&*it);

  const int64_t after = lastCycle - policy.window;  // the window: cycles > after
  std::vector<const state::HistoryEntry*> hits, restartOnly;
  std::set<std::pair<int64_t, std::string>> undeclared;  // (cycle, id)
  for (const auto& [id, entries] : byId) {
    bool hasPrevious = false;
    std::string previousWant;
    for (const auto* h : entries) {
      if (h->cycle > after && isUndeclaredChange(*h, hasPrevious, previousWant)) {
        if (!restartOnCauses(h->reason).empty()) {
          restartOnly.push_back(h);
        } else {
          hits.push_back(h);
          undeclared.emplace(h->cycle, h->id);
        }
      }
      // A failure (or a skip) leaves what was there: the want it was after is not
      // held, so the change that later makes it hold is the declared one (a write
      // that failed on a full disk, then succeeded, is not churn).
      if (h->outcome != "failed" && h->outcome != "skipped") {
        hasPrevious = true;
        previousWant = h->want;
      }
    }
  }
  for (const auto* h : restartOnly)
    for (const auto& cause : restartOnCauses(h->reason))
      if (undeclared.count({h->cycle, cause})) {
        hits.push_back(h);
        break;
      }

  std::map<std::string, Churn> out;
  std::map<std::string, std::map<std::string, int>> reasonCounts;
  for (const auto* h : hits) {
    ++out[h->id].changes;
    ++reasonCounts[h->id][h->reason];
  }
  for (auto& [id, c] : out) {
    for (const auto& rc : reasonCounts[id]) c.reasons.emplace_back(rc);
    std::stable_sort(c.reasons.begin(), c.reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    c.churning = c.changes >= policy.threshold;
  }
  return out;
}

}  // namespace mesh::apply
