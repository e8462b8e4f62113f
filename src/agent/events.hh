// Everything the agent waits for, in one epoll set: signals (signalfd — no work
// in signal handlers at all), the declaration's directory (inotify), the
// watchdog timer (timerfd) and the end of a cycle (an eventfd the cycle's
// thread writes).
#pragma once

#include <chrono>
#include <string>

#include "util/fd.hh"

namespace mesh::agent {

struct Woken {
  bool hangup = false;              // SIGHUP
  int terminate = 0;                // SIGTERM or SIGINT (the signal), 0 when none
  bool declarationTouched = false;  // an event on the declaration's file name
  bool watchdog = false;            // the watchdog period has passed
  bool cycleDone = false;           // the cycle thread has finished
  bool fleet = false;               // the fleet link has news (a pushed declaration)
  bool drift = false;               // the drift watch has events (agent/drift_watch.hh)
  bool pause = false;  // an event on the pause file (mesh-host pause / resume, state/pause.hh)
};

class Events {
 public:
  // Blocks SIGHUP, SIGTERM and SIGINT in the calling thread (and so in every
  // thread it starts later) and receives them through a signalfd. Watches the
  // directory of `declarationPath`, so that an editor's rename over the file is
  // seen (none when it is empty: fleet mode), and the directory of `pausePath` (the
  // state directory) for the pause file (none when empty). A zero `watchdogPeriod`
  // arms no timer.
  Events(const std::string& declarationPath, std::chrono::microseconds watchdogPeriod,
         const std::string& pausePath = "");
  ~Events();
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;

  // Waits up to `timeoutMs` (-1: forever) and reports what happened.
  Woken wait(int timeoutMs);

  // From the cycle's thread: wakes wait() with cycleDone.
  void signalCycleDone();
  // From the fleet link's thread: wakes wait() with fleet.
  void signalFleet();
  // Wakes wait() with drift when `fd` (the drift watch's inotify) is readable; the
  // caller reads it.
  void watchDrift(int fd);

 private:
  void readSignals(Woken& w);
  void readInotify(Woken& w);

  std::string fileName_, pauseName_;
  int declarationWatch_ = -1, pauseWatch_ = -1;
  Fd epoll_, signals_, inotify_, watchdog_, cycleDone_, fleet_;
  int drift_ = -1;  // not owned
};

}  // namespace mesh::agent
