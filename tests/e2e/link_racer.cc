// The hostile local user of hostile_user_test.cc, as a program: run as that user
// (setpriv), it swaps directories it owns with symbolic links to places it must
// never be able to make mesh-host write, as fast as it can, until told to stop.
//
//   mesh_link_racer --stop FILE --seconds N [--chmod MODE] DIR=TARGET…
//
// For every DIR (an absolute path whose parent the user can write), a link
// "<DIR>.racer" → TARGET is made beside it; then, in a loop over every DIR,
// renameat2(RENAME_EXCHANGE) swaps DIR and the link, so DIR is in turn the real
// directory and a link. Everything is done through descriptors of the parent
// and of the real directory opened at the start, so a DIR nested in another DIR
// keeps racing while its parent is swapped out. With --chmod, the real directory
// is given MODE after every swap (so an apply always has a mode to set).
//
// It stops when FILE exists or after N seconds, puts every real directory back
// at its name, removes the links, prints "swaps <count>" and exits 0; 2 on bad
// usage or when the first swap cannot be made at all.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Position {
  std::string path, target, name, link;
  int parent = -1;  // the directory holding `name`
  int dir = -1;     // the real directory, wherever it is named now
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "link_racer: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}

bool isLink(const Position& p) {
  struct stat st {};
  return ::fstatat(p.parent, p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

bool exchange(const Position& p) {
  return ::renameat2(p.parent, p.name.c_str(), p.parent, p.link.c_str(), RENAME_EXCHANGE) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string stop;
  int seconds = 10;
  int chmodMode = -1;
  std::vector<Position> positions;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--stop" && i + 1 < argc) {
      stop = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atoi(argv[++i]);
    } else if (a == "--chmod" && i + 1 < argc) {
      chmodMode = static_cast<int>(std::strtol(argv[++i], nullptr, 8));
    } else if (auto eq = a.find('='); eq != std::string::npos && a.starts_with("/")) {
      Position p;
      p.path = a.substr(0, eq);
      p.target = a.substr(eq + 1);
      const auto slash = p.path.rfind('/');
      p.name = p.path.substr(slash + 1);
      p.link = p.name + ".racer";
      positions.push_back(p);
    } else {
      std::fprintf(stderr,
                   "usage: link_racer --stop FILE --seconds N [--chmod MODE] DIR=TARGET...\n");
      return 2;
    }
  }
  if (stop.empty() || positions.empty()) {
    std::fprintf(stderr, "link_racer: --stop and at least one DIR=TARGET are needed\n");
    return 2;
  }

  for (auto& p : positions) {
    const std::string parent = p.path.substr(0, p.path.rfind('/'));
    p.parent = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p.parent < 0) die("cannot open " + parent);
    p.dir = ::openat(p.parent, p.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p.dir < 0) die("cannot open " + p.path);
  }
  // Every descriptor first: a nested DIR is reached through its parent's name.
  for (auto& p : positions) {
    ::unlinkat(p.parent, p.link.c_str(), 0);
    if (::symlinkat(p.target.c_str(), p.parent, p.link.c_str()) != 0)
      die("cannot link " + p.path + ".racer");
    if (!exchange(p)) die("cannot exchange " + p.path + " with a link");
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  long swaps = static_cast<long>(positions.size());
  for (unsigned long round = 0;; ++round) {
    if ((round & 63) == 0 &&
        (::access(stop.c_str(), F_OK) == 0 || std::chrono::steady_clock::now() >= deadline))
      break;
    for (const auto& p : positions) {
      if (exchange(p)) ++swaps;
      if (chmodMode >= 0) ::fchmod(p.dir, static_cast<mode_t>(chmodMode));
    }
  }

  int rc = 0;
  for (const auto& p : positions) {
    if (isLink(p) && !exchange(p)) {
      std::fprintf(stderr, "link_racer: cannot put %s back: %s\n", p.path.c_str(),
                   std::strerror(errno));
      rc = 1;
    }
    if (::unlinkat(p.parent, p.link.c_str(), 0) != 0) {
      std::fprintf(stderr, "link_racer: cannot remove %s.racer: %s\n", p.path.c_str(),
                   std::strerror(errno));
      rc = 1;
    }
  }
  std::printf("swaps %ld\n", swaps);
  return rc;
}
