// mesh-host-supervise: keeps one service running. A single-threaded event loop
// over a signalfd (SIGCHLD, SIGTERM, SIGINT), the control socket, the service's
// output FIFO, a timerfd (start settling or the wait for READY=1, stop timeout,
// restart backoff), a second timerfd (retrying a status file it could not
// write), for Type=notify the notify socket, and the service's pidfd — its own
// child or an adopted orphan. It waits for that one process only (waitid on the
// pidfd), never for "any child". It never sleeps blindly.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "supervise/builtin/log_writer.hh"
#include "supervise/builtin/notify_socket.hh"
#include "supervise/builtin/service_files.hh"
#include "supervise/builtin/unit_config.hh"
#include "util/fd.hh"

namespace mesh::supervise::builtin {

struct SupervisorArgs {
  std::string serviceDir;  // in the state directory: the unit
  std::string runDir;      // runtime records (status, lock, sockets, FIFO); "" → serviceDir
  std::string logPath;
  int readyFd = -1;        // gets the first reply line, then is closed
  bool adoptOnly = false;  // adopt a live orphan, but never start a new process
};

// How long a freshly exec'd service must stay up before a start counts as
// done, at most: a command that dies at once ("exit 3", a missing library)
// fails the start with its exit status and last log line instead of reporting
// success. Type=notify has no settle window: it is started when it sends READY=1.
constexpr int64_t kSettleUs = 100'000;
// A service found idle before that — asleep, waiting for work, with no child
// process it might be waiting on (processIsIdle) — once it has lived this long,
// is started at once: looked at this often. A start then costs a few ms, not
// 100 (50 services started one after another: 5 s of waiting, gone).
constexpr int64_t kSettleMinUs = 3'000;
constexpr int64_t kSettleStepUs = 2'000;
// Crash restarts of a service that lived less than this back off exponentially…
constexpr int64_t kQuickCrashUs = 10'000'000;
// …up to this delay.
constexpr int64_t kMaxBackoffUs = 30'000'000;
// A status file that could not be written is tried again this often.
constexpr int64_t kRecordRetryUs = 1'000'000;

// A pidfd for `pid`, close-on-exec; invalid where pidfds are not (Linux < 5.3).
Fd openPidfd(pid_t pid);

class ServiceSupervisor {
 public:
  explicit ServiceSupervisor(SupervisorArgs args);
  // Runs until the service is stopped or ends for good; returns the exit code.
  int run();

 private:
  enum class Phase { Idle, Starting, Running, Stopping, Backoff, Done };
  // What follows when the stopped process is gone: the supervisor exits, a new
  // process starts, or — a Type=notify start that timed out — the exit counts
  // as the start's failure and Restart= decides.
  enum class AfterStop { Exit, Relaunch, StartFailed };
  struct ChildExit {
    bool known = false;  // false for an adopted process: not our child, no status
    int waitStatus = 0;
  };

  // supervisor_loop.cc: setup, the event loop, the control connections.
  bool acquireLock();
  void setUp();
  void loop();
  void onSignal();
  void onAccept();
  void onConnection(int fd);
  void onOutput();
  void onNotify();
  void command(const std::string& cmd, Fd conn);
  // reply() answers as is (queries); answer() and replyAll() answer a request
  // that changed the state, and turn "ok" into a failure when that state could
  // not be recorded (recorded()).
  void reply(Fd conn, const Reply& r);
  void answer(Fd conn, const Reply& r);
  void replyAll(std::vector<Fd>& waiters, const Reply& r);
  Reply recorded(const Reply& r) const;
  void markStale(bool stale);
  void watch(int fd);
  void armTimer(int64_t us);

  // supervisor_service.cc: the service's life.
  void startUp();
  bool loadUnit(bool tellWaiters = true);  // false when the unit cannot be used
  void launch();
  void openNotifySocket();
  void becomeReady();
  bool tryAdopt();
  void retireLegacyRecords();
  void useOutput(const std::string& fifo);
  void beginStop(AfterStop after);
  // A reload request: runs ExecReload= (with $MAINPID) and waits for it, at most
  // TimeoutStartSec=, or sends SIGHUP to the main process when there is none. The
  // main process stays as it is.
  Reply reloadService();
  void onTimer();
  void onTerminate(int signo);
  // Reaps the service's process if it has exited (waitid on its pidfd, or on its
  // pid where pidfds are missing) and handles the exit.
  void checkChild();
  void onChildExit(ChildExit e);
  // startFailure: the reason to give waiters when the process died while
  // starting; timedOut: it was stopped for not sending READY=1 in time.
  void afterCrash(bool clean, bool bySignal, const std::string& startFailure,
                  bool timedOut = false);
  void finish(const std::string& state, const std::string& startFailure = "");
  void setState(const std::string& state);
  void record();  // writes status_; on failure sets recordError_ and retries

  SupervisorArgs args_;
  ServicePaths paths_;
  Fd lock_, epoll_, signals_, timer_, retry_, listen_, output_, pidfd_;
  LogWriter log_;
  NotifySocket notify_;    // open while the service is Type=notify
  std::string notifyDir_;  // where its address derives from (notifySocketAddress)
  std::map<int, std::pair<Fd, std::string>> connections_;  // fd → (conn, bytes read)

  std::string unitText_;
  ServiceConfig config_;
  Status status_;
  Phase phase_ = Phase::Idle;
  AfterStop afterStop_ = AfterStop::Exit;
  pid_t child_ = 0;
  bool adopted_ = false;
  bool killSent_ = false;
  bool startTimedOut_ = false;  // this process did not send READY=1 in time
  int refusedNotifications_ = 0;
  int64_t childStartMono_ = 0;
  int quickCrashes_ = 0;
  std::vector<Fd> launchWaiters_, stopWaiters_;
  int exitCode_ = 0;
  // Why the status file does not hold status_ ("" when it does): "cannot record
  // the status in <path>: No space left on device (errno 28)".
  std::string recordError_;
};

}  // namespace mesh::supervise::builtin
