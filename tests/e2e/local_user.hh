// A real unprivileged user for a test: made with useradd, removed with userdel,
// and commands run as it through setpriv (its uid and gid, no other group).
// Needs root.
#pragma once

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.hh"

namespace mesh::e2e {

// useradd/userdel take a lock on /etc/passwd; tests running in parallel wait.
inline Result withPasswdLock(const std::vector<std::string>& argv) {
  Result r;
  for (int attempt = 0; attempt < 50; ++attempt) {
    r = runCommand(argv);
    // 10: cannot lock /etc/passwd (useradd, userdel); 1: could not lock (some versions)
    if (r.code == 0 || (r.code != 10 && r.err.find("lock") == std::string::npos)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

class LocalUser {
 public:
  // "<prefix><pid>x<n>": unique across test processes and within one.
  explicit LocalUser(const std::string& prefix) {
    static int counter = 0;
    name = fmt::format("{}{}x{}", prefix, ::getpid(), ++counter);
    made = withPasswdLock(
        {"useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name});
    if (made.code != 0) return;
    if (const passwd* pw = ::getpwnam(name.c_str())) {
      uid = pw->pw_uid;
      gid = pw->pw_gid;
    }
  }
  ~LocalUser() {
    if (made.code != 0) return;
    withPasswdLock({"userdel", name});
    if (::getgrnam(name.c_str())) withPasswdLock({"groupdel", name});
  }
  LocalUser(const LocalUser&) = delete;
  LocalUser& operator=(const LocalUser&) = delete;

  bool ok() const { return made.code == 0 && uid != 0; }

  Result run(std::vector<std::string> argv) const {
    std::vector<std::string> full = {"setpriv", fmt::format("--reuid={}", uid),
                                     fmt::format("--regid={}", gid), "--clear-groups"};
    full.insert(full.end(), argv.begin(), argv.end());
    return runCommand(full);
  }

  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  Result made;  // useradd's
};

}  // namespace mesh::e2e
