#include "agent/log.hh"
#include "util/clock.hh"
#include "util/text_safe.hh"

#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include <fmt/format.h>

namespace mesh::agent {

namespace {

std::string isoTimeMs(int64_t unixMs) {
  std::time_t t = unixMs / 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, unixMs % 1000);
}

}  // namespace

const char* levelName(Level l) {
  switch (l) {
    case Level::Error:
      return "error";
    case Level::Warning:
      return "warning";
    case Level::Notice:
      return "notice";
    case Level::Info:
      return "info";
  }
  return "info";
}

std::string formatLogLine(LogFormat format, bool journal, Level level, const std::string& msg,
                          const nlohmann::json& fields, int64_t unixMs) {
  const std::string prefix = journal ? fmt::format("<{}>", static_cast<int>(level)) : "";
  if (format == LogFormat::Json) {
    // Ordered: ts, level and msg lead every line, then the fields.
    nlohmann::ordered_json j = {
        {"ts", isoTimeMs(unixMs)}, {"level", levelName(level)}, {"msg", msg}};
    if (fields.is_object())
      for (const auto& [k, v] : fields.items())
        if (!j.contains(k)) j[k] = v;
    // Invalid UTF-8 (a path in an error message) is replaced, never a throw.
    return prefix + jsonOut(j) + "\n";
  }
  // Outside journald (which stamps lines itself), every line starts with its
  // time, RFC 3339 in UTC with milliseconds.
  const std::string lead = journal ? prefix : isoTimeMs(unixMs) + " ";
  std::string out;
  size_t start = 0;
  do {
    size_t end = msg.find('\n', start);
    if (end == std::string::npos) end = msg.size();
    // Each line escaped (util/text_safe.hh): no CR, ESC or invalid byte from a reason,
    // a path or an etcd key reaches a terminal or a log viewer raw.
    out += lead + shownText(std::string_view(msg).substr(start, end - start)) + "\n";
    start = end + 1;
  } while (start < msg.size());
  return out;
}

bool stderrIsJournal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (!env) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

std::vector<std::string> journalFields(Level level, const std::string& msg,
                                       const nlohmann::json& fields) {
  // Values escaped as the text log escapes them: journalctl shows a field holding a
  // control or invalid byte as a blob, and a viewer would obey an ESC in it.
  std::vector<std::string> out = {"MESSAGE=" + shownLines(msg),
                                  fmt::format("PRIORITY={}", static_cast<int>(level)),
                                  "SYSLOG_IDENTIFIER=mesh-host"};
  if (!fields.is_object()) return out;
  static const std::pair<const char*, const char*> kNamed[] = {
      {"id", "MESH_RESOURCE"},     {"module", "MESH_MODULE"}, {"kind", "MESH_KIND"},
      {"outcome", "MESH_OUTCOME"}, {"reason", "MESH_REASON"}, {"cycle", "MESH_CYCLE"}};
  for (const auto& [key, value] : fields.items()) {
    std::string name;
    for (const auto& [from, to] : kNamed)
      if (key == from) name = to;
    if (name.empty()) {
      // Any other field: MESH_<KEY>, in the characters journald allows.
      name = "MESH_";
      for (char c : key)
        name += std::isalnum(static_cast<unsigned char>(c))
                    ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                    : '_';
    }
    if (value.is_null()) continue;
    out.push_back(name + "=" +
                  shownText(value.is_string() ? value.get<std::string>() : jsonOut(value)));
  }
  return out;
}

void Logger::log(Level level, const std::string& msg, const nlohmann::json& fields) {
  if (journal_ && format_ == LogFormat::Text) {
    // Native journal entries: every field searchable (journalctl MESH_OUTCOME=failed).
    const auto entries = journalFields(level, msg, fields);
    std::vector<struct iovec> iov;
    iov.reserve(entries.size());
    for (const auto& e : entries) iov.push_back({const_cast<char*>(e.data()), e.size()});
    if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) return;
    // journald not listening on its native socket: the stream below still is.
  }
  const std::string line = formatLogLine(format_, journal_, level, msg, fields, unixNowMs());
  std::lock_guard<std::mutex> guard(mutex_);
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to log to: nothing better to do
    done += static_cast<size_t>(n);
  }
}

}  // namespace mesh::agent
