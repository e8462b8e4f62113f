#include "supervise/settle_window.hh"

#include <fmt/format.h>

namespace mesh::supervise {

std::string reasonLine(std::string_view line) {
  constexpr size_t kMaxLine = 500;
  return std::string(line.substr(0, kMaxLine));
}

std::string notSettled(std::string_view how, std::string_view lastLine) {
  std::string why = fmt::format("{} within {}ms of its start", how, kSettle.count());
  if (!lastLine.empty()) why += ": " + reasonLine(lastLine);
  return why;
}

}  // namespace mesh::supervise
