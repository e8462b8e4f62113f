// The sd_notify(3) end of a Type=notify service: a unix datagram socket whose
// address the service finds in NOTIFY_SOCKET, the messages read from it, and
// who may send them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervise/builtin/unit_config.hh"
#include "util/fd.hh"

namespace mesh::supervise::builtin {

// What one datagram says: newline-separated assignments ("READY=1\nSTATUS=up").
// Only what the supervisor acts on is kept; MAINPID=, WATCHDOG=, BARRIER=… are
// ignored.
struct NotifyMessage {
  bool ready = false;                 // READY=1
  std::optional<std::string> status;  // STATUS=…, the last one given
};
[[nodiscard]] NotifyMessage parseNotifyMessage(std::string_view datagram);

// Where a service's notify socket lives: "<serviceDir>/notify.sock" when the
// service runs as the supervisor's own user (another user cannot pass the state
// directory, which is 0750) and the path fits in sun_path; otherwise an abstract
// socket "@mesh-host-supervise/<hash of serviceDir>", which any user reaches and
// which has no length problem. The same for every supervisor of the service, so
// one that adopts an orphan hears it again.
std::string notifySocketAddress(const std::string& serviceDir, bool sameUser);

class NotifySocket {
 public:
  struct Datagram {
    pid_t sender = 0;  // from SCM_CREDENTIALS, which the kernel checks
    std::string text;
    // Descriptors passed along (systemd-notify's BARRIER=1 pipe). They close with
    // the datagram, after it was handled: the sender waits for that close, so it is
    // still alive — and its ancestry readable — while its READY=1 is checked.
    std::vector<Fd> fds;
  };

  NotifySocket() = default;
  // Binds a datagram socket at `address`: a path (a stale socket there is
  // replaced) or "@name" (abstract; when the name is taken, a variant with this
  // process's pid). Throws mesh::Error.
  static NotifySocket bind(const std::string& address);

  explicit operator bool() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  const std::string& address() const { return address_; }  // the value of NOTIFY_SOCKET

  // Every datagram waiting (it never blocks). Descriptors passed along are
  // closed at once — systemd-notify's BARRIER=1 waits for exactly that.
  std::vector<Datagram> receiveAll();

 private:
  Fd fd_;
  std::string address_;
};

// Whether a message from `sender` counts for the service whose main process is
// `mainPid` (0: none). Main: that process only. All: also a process of its
// process group (the service's group is its main pid, set at spawn) or a
// descendant of it. A sender that has exited by the time its message is read
// cannot be placed and is refused, as systemd does; systemd-notify waits for the
// message to be read (BARRIER=1), so it is never caught by that.
bool notifySenderAccepted(pid_t sender, pid_t mainPid, NotifyAccess access);

}  // namespace mesh::supervise::builtin
