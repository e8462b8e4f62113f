// The service's log: output copied line by line into <log>, rotated by size
// (<log>.1 newest … <log>.<keep> oldest). A log that cannot be written never
// stops the supervisor: the output is dropped and counted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/fd.hh"

namespace mesh::supervise::builtin {

class LogWriter {
 public:
  LogWriter(std::string path, uint64_t maxBytes, int keep = 3);

  void setMaxBytes(uint64_t maxBytes) { maxBytes_ = maxBytes; }
  // Output of the service; a partial last line waits for the rest of it.
  void serviceOutput(std::string_view bytes);
  // Writes out a partial line (the service exited without a final newline).
  void flushPartial();
  // A line of the supervisor's own, marked as such.
  void note(std::string_view line);

  // The last non-empty line of the service's output (for failure reasons).
  const std::string& lastServiceLine() const { return lastLine_; }
  void forgetLastServiceLine() { lastLine_.clear(); }

 private:
  void writeOut(std::string_view bytes);
  void rotate();
  void open();
  void reopenIfGone();

  std::string path_;
  uint64_t maxBytes_;
  int keep_;
  Fd fd_;
  uint64_t size_ = 0;
  int64_t checkedUs_ = 0;  // monotonic µs of the last reopenIfGone() check
  std::string partial_;
  std::string lastLine_;
};

}  // namespace mesh::supervise::builtin
