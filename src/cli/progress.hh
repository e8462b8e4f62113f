// A one-line progress report on a terminal: "[ 4200/10000]  42%  3500/s  ETA 2s",
// redrawn at most ten times a second on stderr, only when stderr is a TTY and the
// work has lasted long enough to be worth watching; erased when done. Nothing at
// all otherwise (a pipe, a log, a fast no-op cycle).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mesh::cli {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // `enabled`: whether to draw at all (stderr is a terminal).
  explicit Progress(bool enabled, Clock::time_point start = Clock::now())
      : enabled_(enabled), start_(start) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  // Whether stderr is a terminal.
  static bool stderrIsTerminal();

  void update(size_t done, size_t total) {
    if (enabled_) update(done, total, Clock::now());  // no clock read per resource otherwise
  }
  void update(size_t done, size_t total, Clock::time_point now);
  // Work measured in bytes within it (a bundle's download, its unpacking), drawn in
  // place of the count while it lasts; its rate counts from its own start.
  void updateBytes(std::string_view what, uint64_t done, uint64_t total,
                   Clock::time_point now = Clock::now());
  // Erases the line, if one was drawn.
  void finish();

  // The line for `done` of `total` after `elapsed` (no terminal codes): pure, for tests.
  static std::string line(size_t done, size_t total, std::chrono::milliseconds elapsed);
  // "unpacking /opt/app  12.0/200.0 MiB   6%  40.0 MiB/s  ETA 5s" (total 0: not known).
  static std::string bytesLine(std::string_view what, uint64_t done, uint64_t total,
                               std::chrono::milliseconds elapsed);
  // 512 B, 12.0 KiB, 3.4 MiB, 1.2 GiB.
  static std::string bytesText(uint64_t n);

  // Work shorter than this draws nothing; redraws are this far apart at least.
  static constexpr std::chrono::milliseconds kQuiet{500};
  static constexpr std::chrono::milliseconds kEvery{100};

 private:
  void draw(const std::string& text, Clock::time_point now);

  bool enabled_;
  Clock::time_point start_;
  Clock::time_point drawn_{};
  bool shown_ = false;
  std::string bytesWhat_;  // the byte work being drawn, "" none
  Clock::time_point bytesStart_{};
};

}  // namespace mesh::cli
