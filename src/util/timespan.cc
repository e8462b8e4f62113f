#include "util/timespan.hh"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

namespace mesh {

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t';
}

// Longest first where one is a prefix of another is irrelevant: a unit is the
// whole run of letters after the number, compared exactly.
constexpr std::pair<std::string_view, double> kUnits[] = {{"us", 1},
                                                          {"usec", 1},
                                                          {"µs", 1},
                                                          {"ms", 1e3},
                                                          {"msec", 1e3},
                                                          {"s", 1e6},
                                                          {"sec", 1e6},
                                                          {"second", 1e6},
                                                          {"seconds", 1e6},
                                                          {"m", 60e6},
                                                          {"min", 60e6},
                                                          {"minute", 60e6},
                                                          {"minutes", 60e6},
                                                          {"h", 3600e6},
                                                          {"hr", 3600e6},
                                                          {"hour", 3600e6},
                                                          {"hours", 3600e6},
                                                          {"d", 86400e6},
                                                          {"day", 86400e6},
                                                          {"days", 86400e6},
                                                          {"w", 604800e6},
                                                          {"week", 604800e6},
                                                          {"weeks", 604800e6},
                                                          {"M", 2629800e6},
                                                          {"month", 2629800e6},
                                                          {"months", 2629800e6},
                                                          {"y", 31557600e6},
                                                          {"year", 31557600e6},
                                                          {"years", 31557600e6}};

bool unitLetter(char c) {
  // Letters, and the bytes of "µ" (UTF-8 0xC2 0xB5).
  return std::isalpha(static_cast<unsigned char>(c)) || c == '\xC2' || c == '\xB5';
}

}  // namespace

std::optional<int64_t> parseTimeSpanUs(std::string_view text) {
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
  if (text == "infinity") return kTimeSpanInfinity;
  if (text.empty()) return std::nullopt;
  const std::string s(text);  // strtod needs a terminated string
  const char* p = s.c_str();
  double total = 0;
  while (*p) {
    while (isSpace(*p)) ++p;
    if (!*p) break;
    if (!std::isdigit(static_cast<unsigned char>(*p)) && *p != '.') return std::nullopt;
    char* end = nullptr;
    const double n = std::strtod(p, &end);
    if (end == p || n < 0 || !std::isfinite(n)) return std::nullopt;
    p = end;
    while (isSpace(*p)) ++p;
    double unit = 1e6;  // a bare number is seconds
    if (unitLetter(*p)) {
      const char* w = p;
      while (unitLetter(*p)) ++p;
      const std::string_view word(w, static_cast<size_t>(p - w));
      bool known = false;
      for (const auto& [name, us] : kUnits)
        if (word == name) {
          unit = us;
          known = true;
        }
      if (!known) return std::nullopt;
    }
    total += n * unit;
  }
  if (total > 1e17) return kTimeSpanInfinity;
  return static_cast<int64_t>(std::llround(total));
}

}  // namespace mesh
