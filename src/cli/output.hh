// Rendering cycle reports: the human lines and the JSON object of docs/json.md.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "apply/cycle.hh"
#include "state/pause.hh"
#include "util/json_schema.hh"

namespace mesh::cli {

using ::mesh::kJsonSchema;  // "schema": 1 (util/json_schema.hh)

// Every line a command prints goes through these (util/text_safe.hh): a line with
// any byte a terminal would obey (CR, LF, ESC, any control, invalid UTF-8) escaped;
// lines (a diff, a multi-line error) with only their line breaks and tabs kept; a
// JSON answer with invalid UTF-8 replaced and no raw control byte.
void printLine(std::string_view line, std::FILE* to = stdout);
// What printLine writes of `line`: to print later.
std::string shownLine(std::string_view line);
void printLines(std::string_view text, std::FILE* to = stdout);
void printJson(const nlohmann::json& answer);

// "created demo.config (demo): 12 bytes, mode 0644" — detail, then the reason
// (omitted when it is just "new").
std::string outcomeLine(const apply::ResourceResult& r, bool plan);
// What the cycle changed of service users' access to their bundles, one
// "access: …" line each on stdout; why it could not, on stderr.
void printAccess(const apply::CycleReport& r);
std::string summaryLine(const apply::CycleReport& r, bool plan);
// "3 created, 0 updated, 7 unchanged, 0 removed, 1 failed" (released and skipped only
// when there are any) and {"created": 3, … every outcome}.
std::string tallyText(const Tally& t);
nlohmann::json tallyJson(const Tally& t);
// A pause (mesh-host pause, state/pause.hh) as status and pause print it; null when not paused.
nlohmann::json pauseJson(const std::optional<state::Pause>& p);
nlohmann::json reportJson(const apply::CycleReport& r, const std::string& node, bool plan);
// One element of its "outcomes".
nlohmann::json outcomeJson(const apply::ResourceResult& r, bool plan);
// reportJson(r, node, false) as text, its "outcomes" being `outcomes`: the outcomes'
// JSON objects, comma-separated, as a sink serialized them during the cycle.
std::string reportJsonText(const apply::CycleReport& r, const std::string& node,
                           std::string_view outcomes);

// What `--json` prints on stdout when a command ends in an error instead of its
// answer: {"schema", "error": {kind, file, line, column, message, hint},
// "errors": [every problem], "nothing_done"}. `kind` is "bad_input" (exit 2) or
// "failed" (exit 1); file/line/column are null when unknown.
nlohmann::json errorJson(const std::exception& e, bool badInput, const std::string& nothingDone);

}  // namespace mesh::cli
