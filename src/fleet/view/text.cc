#include "fleet/view/text.hh"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "fleet/protocol.hh"
#include "fleet/statement.hh"
#include "fleet/view/words.hh"
#include "util/text_safe.hh"
#include "util/time_text.hh"

namespace mesh::fleet {

namespace {

// The table: columns padded to their widest cell, each cell escaped first.
void tableLines(std::vector<std::vector<std::string>> rows, std::vector<std::string>& out) {
  for (auto& row : rows)
    for (auto& cell : row) cell = shownText(cell);
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      widths.resize(std::max(widths.size(), row.size()));
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
    out.push_back(std::move(line));
  }
}

// "versions: 3 node(s) on serial 3 (sha256:77aa01b2c3d4), …", then one line per version
// saying who pushed it and when.
void versionLines(const std::vector<VersionView>& versions, int64_t now,
                  std::vector<std::string>& out) {
  std::vector<std::string> parts;
  for (const auto& v : versions)
    parts.push_back(v.digest.empty()
                        ? fmt::format("{} node(s) with nothing applied", v.nodes.size())
                        : fmt::format("{} node(s) on serial {} ({})", v.nodes.size(),
                                      serialText(v.serial), shortDigest(v.digest)));
  out.push_back(fmt::format("versions: {}", fmt::join(parts, ", ")));
  for (const auto& v : versions) {
    if (v.digest.empty()) continue;
    const std::string head =
        fmt::format("  serial {} ({}):", serialText(v.serial), shortDigest(v.digest));
    if (v.pushedBy.empty())
      out.push_back(
          fmt::format("{} pushed by: not known (no node's statement names it now)", head));
    else
      out.push_back(fmt::format("{} pushed by {} at {} ({}){}", head, shortKey(v.pushedBy),
                                isoTime(v.pushedAtMs), agoText(v.pushedAtMs, now),
                                v.pushedVerified ? "" : ", not signed by a --trust key"));
  }
}

}  // namespace

std::vector<std::string> fleetTextLines(const FleetView& view) {
  std::vector<std::string> out;
  if (view.nodes.empty()) {
    out.push_back(fmt::format("cluster {}: no nodes (nothing under {} at revision {})",
                              view.cluster, FleetKeys{view.cluster}.nodesPrefix(), view.revision));
    return out;
  }
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "WANTED", "APPLIED", "DIGEST", "STATE", "FAILED", "CHURNING", "LAST SEEN"}};
  std::vector<std::string> details;
  for (const auto& v : view.nodes) {
    const auto* s = v.status ? &*v.status : nullptr;
    rows.push_back(
        {v.node, serialText(v.wanted ? std::optional<int64_t>(v.wanted->serial) : std::nullopt),
         serialText(s ? s->serial : std::nullopt), digestText(s ? s->declarationDigest : ""),
         stateName(v.state), s ? std::to_string(s->failed) : "-",
         s ? std::to_string(s->churning.size()) : "-", agoText(v.lastSeenMs(), view.nowMs)});
    for (const auto& r : v.reasons) details.push_back(v.node + ": " + r);
  }
  tableLines(std::move(rows), out);
  if (!details.empty()) out.emplace_back();
  for (auto& d : details) out.push_back(std::move(d));
  std::string tally;
  for (auto state :
       {NodeState::Forged, NodeState::Unenrolled, NodeState::Down, NodeState::Behind,
        NodeState::Refused, NodeState::Failing, NodeState::Paused, NodeState::Churning})
    if (view.count(state)) tally += fmt::format(", {} {}", view.count(state), stateName(state));
  out.emplace_back();
  versionLines(view.versions, view.nowMs, out);
  if (view.rollout) out.push_back(shownText(rolloutLine(*view.rollout)));
  out.push_back(fmt::format("cluster {} at revision {}: {} node(s), {} converged{}", view.cluster,
                            view.revision, view.nodes.size(), view.count(NodeState::Converged),
                            tally));
  return out;
}

}  // namespace mesh::fleet
