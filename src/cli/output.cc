#include "cli/output.hh"

#include <fmt/format.h>

#include "util/error.hh"
#include "util/text_safe.hh"
#include "util/time_text.hh"

namespace mesh::cli {

using apply::Verdict;

namespace {

const char* planVerb(Verdict v) {
  switch (v) {
    case Verdict::Created:
      return "would create";
    case Verdict::Updated:
      return "would update";
    case Verdict::Removed:
      return "would remove";
    case Verdict::Released:
      return "would release";
    case Verdict::Skipped:
      return "would skip";
    case Verdict::Failed:
      return "would fail";
    case Verdict::Unchanged:
      return "unchanged";
  }
  return "?";
}

}  // namespace

std::string shownLine(std::string_view line) {
  return shownText(line) + "\n";
}

void printLine(std::string_view line, std::FILE* to) {
  const std::string shown = shownLine(line);
  std::fwrite(shown.data(), 1, shown.size(), to);
}

void printLines(std::string_view text, std::FILE* to) {
  const std::string shown = shownLines(text);
  std::fwrite(shown.data(), 1, shown.size(), to);
}

void printJson(const nlohmann::json& answer) {
  std::puts(jsonOut(answer).c_str());
}

std::string outcomeLine(const apply::ResourceResult& r, bool plan) {
  // Escaped here, not only where it is printed: the agent logs this line too, and a
  // reason (a service's last output line, a file name) may hold anything.
  const auto& o = r.outcome;
  if (plan && !o.movedFrom.empty() && o.verdict() == Verdict::Updated) {
    std::string line =
        fmt::format("would move {} ({}) {} -> {}", shownText(r.id), shownText(r.module),
                    shownText(o.movedFrom), shownText(o.movedTo));
    if (!o.detail().empty()) line += ": " + shownText(o.detail());
    return line;
  }
  // A plan's give-back says so in its verb: "would restore x (m): a file of …".
  if (plan && o.reason() == apply::reasons::kWouldRestore) {
    std::string line = fmt::format("would restore {} ({})", shownText(r.id), shownText(r.module));
    if (!o.detail().empty()) line += ": " + shownText(o.detail());
    return line;
  }
  std::string line =
      fmt::format("{} {} ({})", plan ? planVerb(o.verdict()) : verdictName(o.verdict()),
                  shownText(r.id), shownText(r.module));
  if (!o.detail().empty()) line += ": " + shownText(o.detail());
  if (!o.reason().empty() && o.reason() != "new") line += ": " + shownText(o.reason());
  return line;
}

std::string tallyText(const Tally& t) {
  std::string text = fmt::format("{} created, {} updated, {} unchanged, {} removed", t.created,
                                 t.updated, t.unchanged, t.removed);
  if (t.released) text += fmt::format(", {} released", t.released);
  if (t.skipped) text += fmt::format(", {} skipped", t.skipped);
  return text + fmt::format(", {} failed", t.failed);
}

nlohmann::json tallyJson(const Tally& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, n] : t.named()) j[std::string(name)] = n;
  return j;
}

void printAccess(const apply::CycleReport& r) {
  for (const auto& line : r.access) printLine("access: " + line);
  if (!r.accessError.empty()) printLine("mesh-host: " + r.accessError, stderr);
}

std::string summaryLine(const apply::CycleReport& r, bool plan) {
  const Tally& t = r.tally;
  if (plan) {
    std::string text = fmt::format("plan: {} to create, {} to update, {} unchanged, {} to remove",
                                   t.created, t.updated, t.unchanged, t.removed);
    if (t.released) text += fmt::format(", {} to release", t.released);
    if (t.skipped) text += fmt::format(", {} to skip", t.skipped);
    return text + fmt::format(", {} failing", t.failed);
  }
  return fmt::format("cycle {}: {} in {} ms", r.cycle, tallyText(t), r.ms);
}

nlohmann::json outcomeJson(const apply::ResourceResult& res, bool plan) {
  const auto& o = res.outcome;
  nlohmann::json j = {{"id", res.id},
                      {"module", res.module},
                      {"kind", res.kind},
                      {"path", res.path.empty() ? nlohmann::json() : nlohmann::json(res.path)},
                      {"outcome", verdictName(o.verdict())},
                      {"reason", o.reason()},
                      {"wrote", o.held().str()},
                      {"detail", o.detail()},
                      {"restarted", o.restarted}};
  if (!o.warning.empty()) j["warning"] = o.warning;
  if (plan) {
    j["diff"] = o.diff;
    // What the apply would do to the service at the end of the cycle.
    j["would"] = o.activation == apply::Outcome::Activation::Restart  ? "restart"
                 : o.activation == apply::Outcome::Activation::Start  ? "start"
                 : o.activation == apply::Outcome::Activation::Reload ? "reload"
                                                                      : "";
  }
  if (!o.movedFrom.empty()) j["moved_from"] = o.movedFrom;
  return j;
}

nlohmann::json reportJson(const apply::CycleReport& r, const std::string& node, bool plan) {
  nlohmann::json outcomes = nlohmann::json::array();
  for (const auto& res : r.results) outcomes.push_back(outcomeJson(res, plan));
  nlohmann::json out = {{"schema", kJsonSchema},
                        {"node", node},
                        {"cycle", r.cycle},
                        {"outcomes", std::move(outcomes)},
                        {"summary", tallyJson(r.tally)}};
  out["summary"]["ms"] = r.ms;
  out["summary"]["supervisor"] = {{"backend", r.supervisor},
                                  {"start", r.supervisorCalls.start},
                                  {"restart", r.supervisorCalls.restart},
                                  {"stop", r.supervisorCalls.stop},
                                  {"reload", r.supervisorCalls.reload},
                                  {"reload_service", r.supervisorCalls.reloadService},
                                  {"install", r.supervisorCalls.install}};
  if (!r.access.empty()) out["access"] = r.access;
  if (!r.accessError.empty()) out["access_error"] = r.accessError;
  if (plan) out["plan"] = true;
  return out;
}

std::string reportJsonText(const apply::CycleReport& r, const std::string& node,
                           std::string_view outcomes) {
  apply::CycleReport empty = r;
  empty.results.clear();
  std::string text = jsonOut(reportJson(empty, node, false));
  // Keys are written sorted: "outcomes" comes after "cycle" and "node", whose
  // values (escaped) cannot hold this unescaped.
  constexpr std::string_view kEmpty = "\"outcomes\":[]";
  const auto at = text.find(kEmpty);
  if (at != std::string::npos) text.insert(at + kEmpty.size() - 1, outcomes);
  return text;
}

nlohmann::json errorJson(const std::exception& e, bool badInput, const std::string& nothingDone) {
  std::vector<InputProblem> problems;
  if (const auto* input = dynamic_cast<const InputError*>(&e)) problems = input->problems();
  if (problems.empty()) problems.push_back({"", 0, 0, e.what(), ""});
  const char* kind = badInput ? "bad_input" : "failed";
  auto known = [](const auto& v, bool has) { return has ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& p : problems)
    errors.push_back({{"kind", kind},
                      {"file", known(p.file, !p.file.empty())},
                      {"line", known(p.line, p.line > 0)},
                      {"column", known(p.column, p.column > 0)},
                      {"message", p.message},
                      {"hint", known(p.hint, !p.hint.empty())}});
  nlohmann::json out = {{"schema", kJsonSchema},
                        {"error", errors[0]},
                        {"errors", errors},
                        {"nothing_done", known(nothingDone, !nothingDone.empty())}};
  return out;
}

nlohmann::json pauseJson(const std::optional<state::Pause>& p) {
  if (!p) return nullptr;
  return {{"reason", p->reason},
          {"user", p->user},
          {"uid", p->uid},
          {"since", isoTime(p->sinceMs)},
          {"since_ms", p->sinceMs}};
}

}  // namespace mesh::cli
