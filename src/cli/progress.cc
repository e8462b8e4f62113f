#include "cli/progress.hh"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

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
  // \r and erase-to-end: the line is redrawn in place.
  std::fprintf(stderr, "\r\033[K%s", line(done, total, elapsed).c_str());
  std::fflush(stderr);
  drawn_ = now;
  shown_ = true;
}

void Progress::finish() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace mesh::cli
