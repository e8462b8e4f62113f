#include "cli/progress.hh"
#include "util/text_safe.hh"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iterator>

namespace mesh::cli {

bool Progress::stderrIsTerminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

std::string Progress::line(size_t done, size_t total, std::chrono::milliseconds elapsed) {
  const int width = static_cast<int>(fmt::format("{}", total).size());
  std::string out = fmt::format("[{:>{}}/{}]", done, width, total);
  if (total > 0) out += fmt::format(" {:>3}%", done * 100 / total);
  const double seconds = static_cast<double>(elapsed.count()) / 1000.0;
  if (seconds > 0 && done > 0) {
    const double rate = static_cast<double>(done) / seconds;
    out += fmt::format("  {:.0f}/s", rate);
    if (done < total) {
      const auto eta = static_cast<long long>((static_cast<double>(total - done) / rate) + 0.5);
      out += eta >= 60 ? fmt::format("  ETA {}m{:02}s", eta / 60, eta % 60)
                       : fmt::format("  ETA {}s", eta);
    }
  }
  return out;
}

void Progress::update(size_t done, size_t total, Clock::time_point now) {
  if (!enabled_ || now - start_ < kQuiet || (shown_ && now - drawn_ < kEvery)) return;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_);
  draw(line(done, total, elapsed), now);
}

void Progress::updateBytes(std::string_view what, uint64_t done, uint64_t total,
                           Clock::time_point now) {
  if (!enabled_) return;
  if (what != bytesWhat_) {
    bytesWhat_ = what;
    bytesStart_ = now;
  }
  if (now - start_ < kQuiet || (shown_ && now - drawn_ < kEvery)) return;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - bytesStart_);
  draw(bytesLine(what, done, total, elapsed), now);
}

void Progress::draw(const std::string& text, Clock::time_point now) {
  // \r and erase-to-end: the line is redrawn in place.
  std::fprintf(stderr, "\r\033[K%s", shownText(text).c_str());
  std::fflush(stderr);
  drawn_ = now;
  shown_ = true;
}

std::string Progress::bytesText(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string Progress::bytesLine(std::string_view what, uint64_t done, uint64_t total,
                                std::chrono::milliseconds elapsed) {
  std::string out = fmt::format("{}  {}", what, bytesText(done));
  if (total > 0) out += fmt::format("/{} {:>3}%", bytesText(total), done * 100 / total);
  const double seconds = static_cast<double>(elapsed.count()) / 1000.0;
  if (seconds > 0 && done > 0) {
    const double rate = static_cast<double>(done) / seconds;
    out += fmt::format("  {}/s", bytesText(static_cast<uint64_t>(rate)));
    if (total > done) {
      const auto eta = static_cast<long long>((static_cast<double>(total - done) / rate) + 0.5);
      out += eta >= 60 ? fmt::format("  ETA {}m{:02}s", eta / 60, eta % 60)
                       : fmt::format("  ETA {}s", eta);
    }
  }
  return out;
}

void Progress::finish() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace mesh::cli
