// A hostile local user's squatter, run as that user (setpriv) by
// hostile_local_test.cc:
//
//   mesh_lock_squatter locks DIR...   every file and directory under each DIR the
//       user can open (links not followed) gets every lock it can take: flock
//       shared, an open-file-description read lock and a process read lock on
//       every byte — what a reader could do to stall a writer. Prints
//       "locked <path>" or "denied <path>" for each, then "ready".
//   mesh_lock_squatter bind COUNT NAME... [--path PATH...]  binds each abstract
//       NAME ("@…") and NAME/<pid> for the next COUNT pids from its own; tries to
//       make a socket at each PATH. Prints "bound <n>", "denied <path>" or
//       "made <path>", then "ready".
//
// Then it holds everything until its stdin closes.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<int> held;

void lockAll(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode) || S_ISSOCK(st.st_mode)) return;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::printf("denied %s\n", path.c_str());
  } else {
    bool any = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    if (S_ISREG(st.st_mode)) {
      struct flock fl {};
      fl.l_type = F_RDLCK;
      fl.l_whence = SEEK_SET;
      fl.l_start = 0;
      fl.l_len = 0;
      int ofd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (ofd >= 0) {
        if (::fcntl(ofd, F_OFD_SETLK, &fl) == 0) any = true;
        held.push_back(ofd);
      }
      // A process lock through a descriptor of its own: on every byte.
      int pfd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (pfd >= 0) {
        if (::fcntl(pfd, F_SETLK, &fl) == 0) any = true;
        held.push_back(pfd);
      }
    }
    held.push_back(fd);
    std::printf("%s %s\n", any ? "locked" : "open", path.c_str());
  }
  if (!S_ISDIR(st.st_mode)) return;
  DIR* d = ::opendir(path.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.push_back(e->d_name);
  ::closedir(d);
  for (const auto& n : names) lockAll(path + "/" + n);
}

bool bindTo(const std::string& name) {
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, name.data(), name.size());
  socklen_t len = sizeof addr;
  if (name[0] == '@') {
    addr.sun_path[0] = '\0';
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return false;
  }
  held.push_back(fd);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string mode = argv[1];
  if (mode == "locks") {
    for (int i = 2; i < argc; ++i) lockAll(argv[i]);
  } else if (mode == "bind") {
    const long count = std::atol(argv[2]);
    int bound = 0;
    bool paths = false;
    for (int i = 3; i < argc; ++i) {
      const std::string name = argv[i];
      if (name == "--path") {
        paths = true;
        continue;
      }
      if (paths) {
        std::printf("%s %s\n", bindTo(name) ? "made" : "denied", name.c_str());
        continue;
      }
      bound += bindTo(name);
      for (long p = ::getpid(); p < ::getpid() + count; ++p)
        bound += bindTo(name + "/" + std::to_string(p));
    }
    std::printf("bound %d\n", bound);
  } else {
    return 2;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  return 0;
}
