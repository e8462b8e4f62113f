// The sd_notify(3) end of a Type=notify service: a unix datagram socket whose
// address the service finds in NOTIFY_SOCKET, the messages read from it, and
// who may send them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
// service runs as the supervisor's own user and the path fits in sun_path.
// Otherwise — a User= service cannot pass the runtime directory (0750) — as root
// "/run/mesh-host-notify/<hash of serviceDir>": a directory only root may write
// (0711: others may pass it, not list it), so no other user can take the name
// first, as anyone can take an abstract one (they are all listed in
// /proc/net/unix). Only a supervisor that is not root with a path too long falls
// back to an abstract socket, "@mesh-host-supervise/<hash of serviceDir>". The
// same for every supervisor of the service, so one that adopts an orphan hears
// it again.
std::string notifySocketAddress(const std::string& serviceDir, bool sameUser);
// The abstract address supervisors before this one gave a User= service, which
// an orphan they left may still send to.
std::string oldNotifySocketAddress(const std::string& serviceDir);
// The root-only directory of the notify sockets of User= services.
inline constexpr const char* kNotifyDir = "/run/mesh-host-notify";

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
  // replaced; in kNotifyDir, which is made 0711 and checked to be root's) or
  // "@name" (abstract; when the name is taken, a variant with a random suffix).
  // A path socket is 0600, owned by `owner` (uid, gid) when given — the User= the
  // service runs as, the only one besides root who may send to it — and removed
  // when this object goes. Throws mesh::Error.
  static NotifySocket bind(const std::string& address,
                           std::optional<std::pair<uid_t, gid_t>> owner = std::nullopt);
  NotifySocket(NotifySocket&& o) noexcept { *this = std::move(o); }
  NotifySocket& operator=(NotifySocket&& o) noexcept;
  ~NotifySocket();

  explicit operator bool() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  const std::string& address() const { return address_; }  // the value of NOTIFY_SOCKET

  // Every datagram waiting (it never blocks). Descriptors passed along are
  // closed at once — systemd-notify's BARRIER=1 waits for exactly that.
  std::vector<Datagram> receiveAll();

 private:
  Fd fd_;
  std::string address_;
  bool removeOnClose_ = false;  // a path socket bound here
};

// Whether a message from `sender` counts for the service whose main process is
// `mainPid` (0: none). Main: that process only. All: also a process of its
// process group (the service's group is its main pid, set at spawn) or a
// descendant of it. A sender that has exited by the time its message is read
// cannot be placed and is refused, as systemd does; systemd-notify waits for the
// message to be read (BARRIER=1), so it is never caught by that.
bool notifySenderAccepted(pid_t sender, pid_t mainPid, NotifyAccess access);

}  // namespace mesh::supervise::builtin
