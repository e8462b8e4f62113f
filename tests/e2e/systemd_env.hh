// One real systemd for the whole test binary: booted as PID 1 of a private
// namespace by tests/systemd/sdns.sh on first use, stopped at exit.
#pragma once

#include <string>
#include <vector>

#include "harness.hh"

namespace mesh::e2e {

class SystemdNamespace {
 public:
  // Whether this machine can boot one (root, unshare, systemd); `why` says not.
  static bool available(std::string* why);
  static SystemdNamespace& instance();

  const std::string& unitDir() const { return unitDir_; }
  const std::string& busAddress() const { return bus_; }
  // In its unit search path, not mesh-host's --unit-dir: where a test installs a
  // unit "as the vendor's" (as a package puts one in /lib/systemd/system).
  std::string vendorDir() const { return dir_ + "/base"; }
  // Where its journald keeps the journal: MESH_HOST_JOURNAL_DIR for mesh-host.
  std::string journalDir() const { return dir_ + "/run/log/journal"; }
  Result ctl(const std::vector<std::string>& args) const;  // systemctl inside

  ~SystemdNamespace();

 private:
  SystemdNamespace();
  std::string dir_, unitDir_, bus_;
};

}  // namespace mesh::e2e
