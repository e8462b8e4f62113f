#include "supervise/builtin/log_writer.hh"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "util/fs.hh"

namespace mesh::supervise::builtin {

namespace {
constexpr size_t kLongestPartialLine = size_t{64} * 1024;
// How often writing checks that the log is still at its path.
constexpr int64_t kRecheckUs = 1'000'000;

// "2026-11-30T12:00:00.123Z ": what every line of the log starts with.
std::string stamp() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  ::gmtime_r(&ts.tv_sec, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03ldZ ", ts.tv_nsec / 1'000'000);
  return buf;
}

int64_t nowUs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}
}  // namespace

LogWriter::LogWriter(std::string path, uint64_t maxBytes, int keep)
    : path_(std::move(path)), maxBytes_(maxBytes), keep_(keep) {
  open();
}

void LogWriter::open() {
  try {
    makeDirs(parentOf(path_), 0750);  // in the state directory: nothing there for others
  } catch (const std::exception&) {
    // Reported by open() failing below.
  }
  fd_ = Fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640));
  struct stat st {};
  size_ = fd_ && ::fstat(fd_.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  checkedUs_ = nowUs();
}

// A log deleted or moved away under us (the state directory was lost) would
// swallow every later line: it is opened again at its path.
void LogWriter::reopenIfGone() {
  if (!fd_ || nowUs() - checkedUs_ < kRecheckUs) return;
  checkedUs_ = nowUs();
  struct stat atPath {
  }, held{};
  if (::fstat(fd_.get(), &held) != 0) return;
  if (::stat(path_.c_str(), &atPath) == 0 && atPath.st_dev == held.st_dev &&
      atPath.st_ino == held.st_ino)
    return;
  fd_.reset();
  open();
}

void LogWriter::rotate() {
  fd_.reset();
  for (int i = keep_; i >= 1; --i) {
    std::string from = i == 1 ? path_ : path_ + "." + std::to_string(i - 1);
    std::string to = path_ + "." + std::to_string(i);
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) break;
  }
  open();
}

void LogWriter::writeOut(std::string_view bytes) {
  if (bytes.empty()) return;
  reopenIfGone();
  if (size_ > 0 && size_ + bytes.size() > maxBytes_) rotate();
  if (!fd_) open();
  while (fd_ && !bytes.empty()) {
    ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // disk full or gone: drop it rather than stop supervising
    size_ += static_cast<uint64_t>(n);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void LogWriter::serviceOutput(std::string_view bytes) {
  partial_.append(bytes);
  size_t end = partial_.rfind('\n');
  if (end == std::string::npos) {
    if (partial_.size() >= kLongestPartialLine) flushPartial();
    return;
  }
  // Rotate only between lines, so a line is never split across two files.
  size_t start = 0;
  while (start <= end) {
    size_t nl = partial_.find('\n', start);
    std::string_view line(partial_.data() + start, nl - start);
    if (!line.empty()) lastLine_ = line;
    writeOut(stamp().append(partial_.data() + start, nl - start + 1));
    start = nl + 1;
  }
  partial_.erase(0, end + 1);
}

void LogWriter::flushPartial() {
  if (partial_.empty()) return;
  lastLine_ = partial_;
  partial_.push_back('\n');
  writeOut(stamp() + partial_);
  partial_.clear();
}

void LogWriter::note(std::string_view line) {
  std::string text = stamp() + "mesh-host-supervise: ";
  text.append(line).push_back('\n');
  writeOut(text);
}

}  // namespace mesh::supervise::builtin
