#include "agent/drift_watch.hh"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "util/beneath.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

// Everything that can make a managed entry differ from what was written: its content,
// its mode or owner, its removal, a rename onto or off its name. (No IN_DONT_FOLLOW: the
// name given is /proc/self/fd/N, which must be followed to the directory it holds.)
constexpr uint32_t kMask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                           IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                           IN_ONLYDIR | IN_EXCL_UNLINK;

// A tree holds at most this many directories watched: beyond, the interval covers it.
constexpr size_t kMaxTreeDirs = 10000;

}  // namespace

DriftWatch::DriftWatch() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  if (!fd_) throwSys("cannot start watching managed paths (inotify_init1)");
}

void DriftWatch::add(const std::string& dir, const std::string& name, const std::string& id,
                     bool tree, std::map<std::string, Dir>& want) {
  Dir& d = want[dir];
  d.path = dir;
  if (tree)
    d.tree = id;
  else
    d.names[name] = id;
}

namespace {

// The kernel resolves a /proc/self/fd name to the directory the descriptor holds, not
// to a path: the watch lands on the directory the link-refusing walk reached.
int watchFd(int inotify, int dir, uint32_t mask) {
  const std::string name = "/proc/self/fd/" + std::to_string(dir);
  return ::inotify_add_watch(inotify, name.c_str(), mask);
}

}  // namespace

void DriftWatch::update(const decl::Declaration& decl, const std::string& root) {
  const std::string base = root == "/" ? "" : root;
  const Beneath top(root, "");
  // Each directory is reached as the cycle reaches it: from the root's descriptor, never
  // through a symbolic link. A planted link in the way leaves the directory unwatched
  // (the interval covers it) instead of watching wherever the link points.
  struct Wanted {
    std::map<std::string, Dir> dirs;
    std::map<std::string, Fd> fds;  // path → the directory opened for it
  } want;
  const auto open = [&](const std::string& rel) -> std::optional<Fd> {
    try {
      return top.openDir(rel);
    } catch (const Error&) {
      return std::nullopt;  // a link or a non-directory on the way
    }
  };
  for (const auto& r : decl.resources) {
    if (r.kind == decl::Kind::Process || r.path().empty()) continue;
    const std::string rel = r.path().substr(1);
    const std::string path = base + r.path();
    const std::string parent = parentOf(path);
    add(parent, baseName(path), r.id, false, want.dirs);
    if (!want.fds.count(parent))
      if (auto fd = open(std::string(splitParent(rel).first)))
        want.fds.emplace(parent, std::move(*fd));
    if (r.kind != decl::Kind::Archive) continue;
    // An archive's tree: the tree itself and every directory in it, opened one below the
    // other without following links.
    auto treeFd = open(rel);
    if (!treeFd) {
      add(path, "", r.id, true, want.dirs);
      continue;
    }
    size_t dirs = 0;
    std::vector<std::pair<std::string, Fd>> todo;
    todo.emplace_back(path, std::move(*treeFd));
    while (!todo.empty() && dirs < kMaxTreeDirs) {
      auto [dirPath, fd] = std::move(todo.back());
      todo.pop_back();
      add(dirPath, "", r.id, true, want.dirs);
      ++dirs;
      Fd listing(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
      DIR* d = listing ? ::fdopendir(listing.get()) : nullptr;
      if (d) {
        (void)listing.release();  // the DIR owns it now
        while (const dirent* e = ::readdir(d)) {
          const std::string_view name = e->d_name;
          if (name == "." || name == "..") continue;
          if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
          Fd sub(::openat(fd.get(), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
          if (sub) todo.emplace_back(dirPath + "/" + std::string(name), std::move(sub));
        }
        ::closedir(d);
      }
      want.fds.emplace(dirPath, std::move(fd));
    }
  }
  // Drop the watches no longer wanted, then add (or refresh) the wanted ones.
  for (auto it = byWatch_.begin(); it != byWatch_.end();) {
    if (want.dirs.count(it->second.path)) {
      ++it;
      continue;
    }
    ::inotify_rm_watch(fd_.get(), it->first);
    it = byWatch_.erase(it);
  }
  std::map<int, Dir> now;
  unwatched_ = 0;
  for (auto& [path, dir] : want.dirs) {
    const auto fd = want.fds.find(path);
    const int wd = fd == want.fds.end() ? -1 : watchFd(fd_.get(), fd->second.get(), kMask);
    if (wd < 0) {
      unwatched_ += dir.names.size() + (dir.tree.empty() ? 0 : 1);
      continue;
    }
    now[wd] = std::move(dir);
  }
  byWatch_ = std::move(now);
}

std::map<std::string, std::string> DriftWatch::drain() {
  std::map<std::string, std::string> drifted;
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n <= 0) break;  // EAGAIN: nothing more
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      const auto it = byWatch_.find(e->wd);
      if (it == byWatch_.end()) continue;
      const Dir& d = it->second;
      const std::string name = e->len ? std::string(e->name) : "";
      if (!d.tree.empty()) {
        drifted.emplace(d.tree, d.path + (name.empty() ? "" : "/" + name));
      } else if (const auto n2 = d.names.find(name); n2 != d.names.end()) {
        drifted.emplace(n2->second, d.path + "/" + name);
      } else if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        for (const auto& [entry, id] : d.names) drifted.emplace(id, d.path);
      }
    }
  }
  return drifted;
}

}  // namespace mesh::agent
