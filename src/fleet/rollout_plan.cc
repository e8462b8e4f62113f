// The pure parts of a rollout (fleet/rollout.hh): its waves, and a previous declaration
// made ready to push again under a new serial.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "fleet/rollout.hh"
#include "util/error.hh"

namespace mesh::fleet {

namespace {

// "12" → 12; nullopt for anything else (signs, spaces, overflow).
std::optional<int64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (const char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

void checkWaveSpec(const std::string& wave) {
  const bool percent = !wave.empty() && wave.back() == '%';
  const auto n = number(percent ? std::string_view(wave).substr(0, wave.size() - 1) : wave);
  if (!n || *n < 1 || (percent && *n > 100))
    throw InputError(
        "--wave '{}': give how many nodes each wave after the canary reaches, as a count (3) "
        "or a share of the nodes selected (25%, from 1% to 100%)",
        wave);
}

std::vector<std::vector<std::string>> planWaves(const std::vector<std::string>& targets,
                                                int64_t canary, const std::string& wave) {
  checkWaveSpec(wave);
  if (canary < 1)
    throw InputError("--canary {}: give how many nodes get the push first (1 or more)", canary);
  if (targets.empty()) throw InputError("a rollout needs at least one node");
  const auto total = static_cast<int64_t>(targets.size());
  int64_t per = 0;
  if (wave.back() == '%')
    per = std::max<int64_t>(1, (total * *number(wave.substr(0, wave.size() - 1)) + 99) / 100);
  else
    per = *number(wave);
  std::vector<std::vector<std::string>> waves;
  const auto first = std::min(canary, total);
  waves.emplace_back(targets.begin(), targets.begin() + first);
  for (int64_t i = first; i < total; i += per)
    waves.emplace_back(targets.begin() + i, targets.begin() + std::min(total, i + per));
  return waves;
}

std::string withSerial(const std::string& text, int64_t serial, const std::string& where) {
  // The top level ends at the first table header; `serial` is a top-level key.
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    const auto key = line.find_first_not_of(" \t");
    if (key != std::string_view::npos && line[key] == '[') break;
    if (key != std::string_view::npos && line.substr(key, 6) == "serial") {
      const auto eq = line.find_first_not_of(" \t", key + 6);
      if (eq != std::string_view::npos && line[eq] == '=') {
        const auto value = line.find_first_not_of(" \t", eq + 1);
        auto stop = value;
        while (stop < line.size() && std::isdigit(static_cast<unsigned char>(line[stop]))) ++stop;
        if (value != std::string_view::npos && stop > value)
          return text.substr(0, at + value) + std::to_string(serial) + text.substr(at + stop);
      }
    }
    at = end + 1;
  }
  throw InputError(
      "{} has no top-level `serial = N` line to give serial {}: it cannot be pushed again as a "
      "revert; push a declaration by hand",
      where, serial);
}

}  // namespace mesh::fleet
