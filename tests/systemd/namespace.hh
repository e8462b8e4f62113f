// A real systemd for tests: tests/systemd/sdns.sh boots the host's systemd as PID 1
// of a private namespace (this machine's PID 1 is not systemd). One namespace per
// test binary: booted on first use (~0.4 s), stopped when the binary's tests end;
// if the binary dies first, sdns.sh's dead-man switch stops it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mesh::testing {

class SystemdNamespace {
 public:
  // Why a namespace cannot be booted here ("" when it can): not root, a tool
  // missing. Tests skip with this reason; CI runs as root and must not skip.
  static std::string unavailableReason();

  // The binary's namespace; boots it on first use (throws when the boot fails).
  static SystemdNamespace& shared();

  const std::string& dir() const { return dir_; }
  // What the systemd backend needs: Options::busAddress, unitDir and journalDir.
  std::string busAddress() const { return "unix:path=" + dir_ + "/run/dbus/system_bus_socket"; }
  std::string unitDir() const { return dir_ + "/etc"; }
  // Where its journald keeps the journal (its /run/log/journal; nothing flushes it
  // to /var): Options::journalDir, MESH_HOST_JOURNAL_DIR.
  std::string journalDir() const { return dir_ + "/run/log/journal"; }

  // `systemctl ARGS` inside; returns stdout (throws when it exits non-zero and
  // `check`).
  std::string ctl(const std::string& args, bool check = true) const;
  // One property as systemctl shows it: `show -p Prop --value UNIT`.
  std::string property(const std::string& unit, const std::string& prop) const;
  // Host PIDs of the unit's processes (from its cgroup).
  std::vector<pid_t> hostPids(const std::string& unit) const;

  void stop();

 private:
  explicit SystemdNamespace(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  bool running_ = true;
};

// Runs a shell command; returns its stdout and sets *status to its exit code.
std::string runCommand(const std::string& command, int* status = nullptr);
// Quotes a word for the shell.
std::string shellQuote(const std::string& s);

}  // namespace mesh::testing
