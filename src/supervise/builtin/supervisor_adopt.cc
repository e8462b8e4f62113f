// Taking over a service process a previous supervisor left running (it was
// killed, or mesh-host was upgraded): found by its status record — in the
// runtime directory, or the state directory of an older mesh-host — and pinned
// by a pidfd before it is believed; its output FIFO and NOTIFY_SOCKET are
// heard again.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "supervise/builtin/service_supervisor.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::builtin {

bool ServiceSupervisor::tryAdopt() {
  auto old = readStatus(paths_.status);
  // No record here, but a supervisor of an older mesh-host may have left one in
  // the state directory (the legacy layout), and with it the FIFO its process
  // writes to.
  const ServicePaths legacy = paths_.legacy();
  bool fromLegacy = false;
  if (!old && !paths_.isLegacy() && isRegularFile(legacy.status)) {
    old = readStatus(legacy.status);
    fromLegacy = old.has_value();
  }
  if (!old || old->pid <= 0 || !processIsAlive(old->pid, old->startTicks)) return false;
  Fd pidfd = openPidfd(old->pid);
  // Checked again once the pidfd pins the pid: it must still be that same process.
  if (!pidfd || !processIsAlive(old->pid, old->startTicks)) return false;
  status_ = *old;
  status_.note = fmt::format("supervisor was gone; adopted pid {}", old->pid);
  child_ = old->pid;
  adopted_ = true;
  pidfd_ = std::move(pidfd);
  watch(pidfd_.get());
  if (fromLegacy) {
    useOutput(legacy.output);
    notifyDir_ = legacy.dir;  // its NOTIFY_SOCKET names the old address
  }
  childStartMono_ = old->sinceUs > 0
                        ? monotonicUs() - std::max<int64_t>(0, realtimeUs() - old->sinceUs)
                        : monotonicUs();
  // For TimeoutStopSec=, Restart= and Type=; defaults when it is unusable.
  (void)loadUnit(false);
  log_.note(fmt::format("adopted pid {}, left running by a previous supervisor", child_));
  if (config_.type == ServiceType::Notify) {
    // Its NOTIFY_SOCKET names the same address: it is heard again. One that
    // had not sent READY=1 yet (and runs this very unit, so it is a notify
    // service) gets TimeoutStartSec= from now.
    try {
      openNotifySocket();
    } catch (const std::exception& e) {
      log_.note(e.what());
    }
    if (old->state == "starting" && old->unitDigest == Digest::ofBytes(unitText_).str()) {
      phase_ = Phase::Starting;
      armTimer(config_.timeoutStartUs == kInfinity ? 0 : config_.timeoutStartUs);
      setState("starting");
      return true;
    }
  }
  phase_ = Phase::Running;
  setState("active");
  return true;
}

// The records a dead supervisor of an older mesh-host left in the state
// directory (its lock is free: checked in run()) would only mislead now.
void ServiceSupervisor::retireLegacyRecords() {
  if (paths_.isLegacy()) return;
  const ServicePaths legacy = paths_.legacy();
  if (isRegularFile(legacy.status)) ::unlink(legacy.status.c_str());
  ::unlink(legacy.socket.c_str());
  ::unlink(legacy.lock.c_str());
  ::unlink(oldSupervisorLock(legacy.lock).c_str());
}

// Reads the service's output from `fifo` (an adopted orphan's, in the legacy
// layout) instead of the FIFO in the runtime directory.
void ServiceSupervisor::useOutput(const std::string& fifo) {
  struct stat st {};
  if (::lstat(fifo.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  Fd fd(::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, output_.get(), nullptr);
  onOutput();  // nothing should be there yet; but never drop it
  output_ = std::move(fd);
  watch(output_.get());
}

}  // namespace mesh::supervise::builtin
