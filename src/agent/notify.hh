// Talking to systemd (sd_notify(3)) when it started us as Type=notify: READY
// after the first cycle, STATUS after each, WATCHDOG keep-alives, STOPPING at the
// end. Every call is a no-op when NOTIFY_SOCKET is not set.
#pragma once

#include <chrono>
#include <string>

namespace mesh::agent {

class Notifier {
 public:
  Notifier();

  bool underSystemd() const { return enabled_; }
  // How often to send WATCHDOG=1: half of WATCHDOG_USEC; zero when no watchdog.
  std::chrono::microseconds watchdogPeriod() const { return watchdogPeriod_; }

  void ready(const std::string& status);  // once; later calls only set STATUS
  void status(const std::string& status);
  void watchdog();
  void stopping(const std::string& status);

 private:
  void send(const std::string& message);
  bool enabled_ = false;
  bool readySent_ = false;
  std::chrono::microseconds watchdogPeriod_{0};
};

}  // namespace mesh::agent
