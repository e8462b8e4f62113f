// Type=notify under the supervisor: the NOTIFY_SOCKET the service is given,
// the datagrams it sends (READY=1, STATUS=), from which processes they are
// accepted (NotifyAccess=), and what READY=1 does.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "supervise/builtin/service_supervisor.hh"
#include "supervise/builtin/spawn_service.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::builtin {

namespace {

// The NOTIFY_SOCKET an adopted orphan was given, when it is the abstract one
// older supervisors gave a User= service (so that its READY=1 is heard again).
std::optional<std::string> oldNotifyAddressOf(pid_t pid, const std::string& serviceDir) {
  std::optional<std::string> environ;
  try {
    environ = readFile("/proc/" + std::to_string(pid) + "/environ");
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!environ) return std::nullopt;
  const std::string old = oldNotifySocketAddress(serviceDir);
  for (std::string_view rest = *environ; !rest.empty();) {
    const size_t end = std::min(rest.find('\0'), rest.size());
    const std::string_view var = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (var == "NOTIFY_SOCKET=" + old) return old;
  }
  return std::nullopt;
}

}  // namespace

void ServiceSupervisor::openNotifySocket() {
  std::string address = notifySocketAddress(notifyDir_, config_.user.empty());
  if (adopted_ && child_ > 0)
    if (auto old = oldNotifyAddressOf(child_, notifyDir_)) address = *old;
  notify_ = NotifySocket::bind(address, serviceUser(config_));
  watch(notify_.fd());
}

void ServiceSupervisor::onNotify() {
  bool changed = false, ready = false;
  for (auto& d : notify_.receiveAll()) {
    if (!notifySenderAccepted(d.sender, child_, config_.notifyAccess)) {
      // A few are noted, so that a wrong NotifyAccess= shows; a flood is not.
      if (++refusedNotifications_ <= 5)
        log_.note(fmt::format("ignored a notification from pid {}: not a process of the service",
                              d.sender));
      continue;
    }
    auto m = parseNotifyMessage(d.text);
    if (m.status && *m.status != status_.statusText) {
      status_.statusText = std::move(*m.status);
      changed = true;
    }
    ready = ready || m.ready;
  }
  if (ready && phase_ == Phase::Starting && config_.type == ServiceType::Notify)
    becomeReady();
  else if (changed)
    setState(status_.state);
}

void ServiceSupervisor::becomeReady() {
  phase_ = Phase::Running;
  armTimer(0);
  status_.sinceUs = realtimeUs();
  log_.note(fmt::format("pid {} is ready (READY=1)", child_));
  setState("active");
  replyAll(launchWaiters_, Reply::ok(child_, adopted_ ? "adopted" : "started"));
}

}  // namespace mesh::supervise::builtin
