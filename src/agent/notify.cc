#include "agent/notify.hh"

#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace mesh::agent {

namespace {

// STATUS is one line; a multi-line message (several declaration errors) keeps its first.
std::string oneLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

}  // namespace

Notifier::Notifier() {
  enabled_ = std::getenv("NOTIFY_SOCKET") != nullptr;
  uint64_t usec = 0;
  // unset_environment=0: sd_notify reads NOTIFY_SOCKET again at every call.
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    watchdogPeriod_ = std::chrono::microseconds(usec / 2);
}

void Notifier::send(const std::string& message) {
  if (enabled_) sd_notify(0, message.c_str());
}

void Notifier::ready(const std::string& status) {
  send((readySent_ ? "" : "READY=1\n") + ("STATUS=" + oneLine(status)));
  readySent_ = true;
}

void Notifier::status(const std::string& status) {
  send("STATUS=" + oneLine(status));
}

void Notifier::watchdog() {
  send("WATCHDOG=1");
}

void Notifier::stopping(const std::string& status) {
  send("STOPPING=1\nSTATUS=" + oneLine(status));
}

}  // namespace mesh::agent
