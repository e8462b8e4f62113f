#include "supervise/builtin/notify_socket.hh"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"
#include "util/trusted_path.hh"

namespace mesh::supervise::builtin {

namespace {

// sd_notify's own limit on a message; a longer one is dropped, not cut.
constexpr size_t kMaxMessage = 4096;
// How far up the parent chain a sender is followed to the main process.
constexpr int kMaxAncestry = 64;

struct ProcessLinks {
  pid_t parent = 0, group = 0;
};

// The parent and process group of a live process, from /proc/<pid>/stat.
std::optional<ProcessLinks> processLinks(pid_t pid) {
  std::optional<std::string> stat;
  try {
    stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  } catch (const SysError&) {
    return std::nullopt;  // it exited while being read
  }
  if (!stat) return std::nullopt;
  // "pid (comm) S ppid pgrp …": comm may hold anything, so parse after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  char state = 0;
  int parent = 0, group = 0;
  if (std::sscanf(stat->c_str() + close + 1, " %c %d %d", &state, &parent, &group) != 3)
    return std::nullopt;
  if (state == 'Z' || state == 'X') return std::nullopt;
  return ProcessLinks{parent, group};
}

// Fills `addr` for a path or an "@abstract" name; returns the address length.
socklen_t makeAddress(const std::string& address, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (address.size() >= sizeof addr.sun_path)
    throw Error("the notify socket address {} is too long", address);
  std::memcpy(addr.sun_path, address.data(), address.size());
  if (address[0] != '@') return sizeof addr;
  addr.sun_path[0] = '\0';
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
}

}  // namespace

NotifyMessage parseNotifyMessage(std::string_view datagram) {
  NotifyMessage m;
  while (!datagram.empty()) {
    size_t eol = datagram.find('\n');
    std::string_view line = datagram.substr(0, eol);
    datagram.remove_prefix(eol == std::string_view::npos ? datagram.size() : eol + 1);
    if (line == "READY=1") m.ready = true;
    // Anything a service sends: bytes that are not UTF-8 replaced as the JSON writers
    // replace them (util/text_safe.hh), so the status file and `status` can hold it.
    if (line.substr(0, 7) == "STATUS=") m.status = validUtf8(line.substr(7));
  }
  return m;
}

std::string notifySocketAddress(const std::string& serviceDir, bool sameUser) {
  std::string path = serviceDir + "/notify.sock";
  if (sameUser && path.size() < sizeof(sockaddr_un{}.sun_path)) return path;
  const std::string hex = Digest::ofBytes(serviceDir).hex().substr(0, 32);
  if (::geteuid() == 0) return std::string(kNotifyDir) + "/" + hex;
  return "@mesh-host-supervise/" + hex;
}

std::string oldNotifySocketAddress(const std::string& serviceDir) {
  return "@mesh-host-supervise/" + Digest::ofBytes(serviceDir).hex().substr(0, 32);
}

namespace {

// kNotifyDir, made when missing: root's, 0711, and nothing on the way another
// user could swap (so that the name bound there is the one the service reaches).
void prepareNotifyDir() {
  requireTrustedDirectory(kNotifyDir, /*mayBeMissing=*/true);
  if (::mkdir(kNotifyDir, 0711) != 0 && errno != EEXIST)
    throwSys(fmt::format("cannot make {}", kNotifyDir));
  requireTrustedDirectory(kNotifyDir);
  Fd fd(::open(kNotifyDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throwSys(fmt::format("cannot open {}", kNotifyDir));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", kNotifyDir));
  if (st.st_uid != ::geteuid())
    throw Error("refusing {}: it is owned by uid {}", kNotifyDir, st.st_uid);
  if ((st.st_mode & 07777) != 0711 && ::fchmod(fd.get(), 0711) != 0)
    throwSys(fmt::format("cannot set the mode of {}", kNotifyDir));
}

std::string randomSuffix() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    throwSys("cannot read random bytes");
  return Digest::ofBytes(std::string_view(reinterpret_cast<char*>(bytes), sizeof bytes))
      .hex()
      .substr(0, 16);
}

}  // namespace

NotifySocket& NotifySocket::operator=(NotifySocket&& o) noexcept {
  if (this != &o) {
    if (removeOnClose_ && fd_) (void)::unlink(address_.c_str());
    fd_ = std::move(o.fd_);
    address_ = std::move(o.address_);
    removeOnClose_ = std::exchange(o.removeOnClose_, false);
  }
  return *this;
}

NotifySocket::~NotifySocket() {
  if (removeOnClose_ && fd_) (void)::unlink(address_.c_str());
}

NotifySocket NotifySocket::bind(const std::string& address,
                                std::optional<std::pair<uid_t, gid_t>> owner) {
  if (address.empty()) throw Error("the notify socket has no address");
  NotifySocket s;
  s.fd_ = Fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.fd_) throwSys("cannot create the notify socket");
  int on = 1;
  if (::setsockopt(s.fd_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    throwSys("cannot ask for the senders' credentials on the notify socket");
  const bool abstract = address[0] == '@';
  if (!abstract) {
    if (address.starts_with(std::string(kNotifyDir) + "/")) prepareNotifyDir();
    if (::unlink(address.c_str()) != 0 && errno != ENOENT)
      throwSys(fmt::format("cannot remove the stale socket {}", address));
    sockaddr_un addr;
    socklen_t len = makeAddress(address, addr);
    // Made 0600 at once (the process is single-threaded): never open to all.
    const mode_t mask = ::umask(0177);
    const int rc = ::bind(s.fd_.get(), reinterpret_cast<sockaddr*>(&addr), len);
    ::umask(mask);
    if (rc != 0) throwSys(fmt::format("cannot bind the notify socket {}", address));
    s.address_ = address;
    s.removeOnClose_ = true;
    // In a directory only root may write: the path cannot have been swapped.
    if (owner && ::lchown(address.c_str(), owner->first, owner->second) != 0)
      throwSys(fmt::format("cannot give the notify socket {} to uid {}", address, owner->first));
    return s;
  }
  std::string candidate = address;
  for (int attempt = 0; attempt < 8; ++attempt) {
    sockaddr_un addr;
    socklen_t len = makeAddress(candidate, addr);
    if (::bind(s.fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0) {
      s.address_ = candidate;
      return s;
    }
    // An abstract name someone else holds: one nobody can guess instead.
    if (errno != EADDRINUSE) break;
    candidate = address + "/" + randomSuffix();
  }
  throwSys(fmt::format("cannot bind the notify socket {}", address));
}

std::vector<NotifySocket::Datagram> NotifySocket::receiveAll() {
  std::vector<Datagram> out;
  if (!fd_) return out;
  for (;;) {
    char buf[kMaxMessage + 1];
    // Room for the credentials and the most descriptors one message can carry.
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int) * 253)];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // EAGAIN: nothing more
    Datagram d;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET) continue;
      if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len == CMSG_LEN(sizeof(ucred))) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        d.sender = cred.pid;
      } else if (c->cmsg_type == SCM_RIGHTS) {
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
          d.fds.emplace_back(fd);
        }
      }
    }
    if (static_cast<size_t>(n) > kMaxMessage) continue;  // cut short: not to be trusted
    d.text.assign(buf, static_cast<size_t>(n));
    while (!d.text.empty() && d.text.back() == '\0') d.text.pop_back();
    out.push_back(std::move(d));
  }
  return out;
}

bool notifySenderAccepted(pid_t sender, pid_t mainPid, NotifyAccess access) {
  if (sender <= 0 || mainPid <= 0 || access == NotifyAccess::None) return false;
  if (sender == mainPid) return true;
  if (access != NotifyAccess::All) return false;
  auto links = processLinks(sender);
  if (!links) return false;
  if (links->group == mainPid) return true;
  for (int hop = 0; hop < kMaxAncestry && links && links->parent > 1; ++hop) {
    if (links->parent == mainPid) return true;
    links = processLinks(links->parent);
  }
  return false;
}

}  // namespace mesh::supervise::builtin
