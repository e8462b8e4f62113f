// mesh-host-supervise [--ready-fd=N] [--adopt-only] [--run-dir=DIR] SERVICE_DIR LOG_FILE
//
// Started by mesh-host's builtin backend, detached, one per service. Reads the
// unit from SERVICE_DIR/unit, runs its ExecStart and keeps it running; keeps
// its records (status, lock, FIFO, sockets) in the runtime directory DIR
// (default: SERVICE_DIR, the layout of older mesh-hosts) and answers
// start/restart/stop/status/observe on DIR/control.sock. The first reply line
// (started, adopted, failed, or "busy" when another supervisor holds the
// service) goes to the --ready-fd descriptor.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "supervise/builtin/service_supervisor.hh"

int main(int argc, char** argv) {
  using mesh::supervise::builtin::ServiceSupervisor;
  using mesh::supervise::builtin::SupervisorArgs;
  SupervisorArgs args;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.substr(0, 11) == "--ready-fd=") {
      args.readyFd = std::atoi(argv[i] + 11);
    } else if (a.substr(0, 10) == "--run-dir=") {
      args.runDir = std::string(a.substr(10));
    } else if (a == "--adopt-only") {
      args.adoptOnly = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "mesh-host-supervise: unknown option %s\n", argv[i]);
      return 2;
    } else {
      positional.emplace_back(a);
    }
  }
  if (positional.size() != 2 || positional[0].empty() || positional[0][0] != '/' ||
      positional[1].empty() || positional[1][0] != '/' ||
      (!args.runDir.empty() && args.runDir[0] != '/')) {
    std::fprintf(stderr,
                 "usage: mesh-host-supervise [--ready-fd=N] [--adopt-only] [--run-dir=DIR] "
                 "SERVICE_DIR LOG_FILE\n"
                 "(all absolute; started by mesh-host's builtin supervisor backend)\n");
    return 2;
  }
  args.serviceDir = positional[0];
  args.logPath = positional[1];
  return ServiceSupervisor(std::move(args)).run();
}
