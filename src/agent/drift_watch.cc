#include "agent/drift_watch.hh"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

// Everything that can make a managed entry differ from what was written: its content,
// its mode or owner, its removal, a rename onto or off its name.
constexpr uint32_t kMask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                           IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                           IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;

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

void DriftWatch::update(const decl::Declaration& decl, const std::string& root) {
  namespace fs = std::filesystem;
  const std::string base = root == "/" ? "" : root;
  std::map<std::string, Dir> want;
  for (const auto& r : decl.resources) {
    if (r.kind == decl::Kind::Process || r.path().empty()) continue;
    const std::string path = base + r.path();
    add(parentOf(path), baseName(path), r.id, false, want);
    if (r.kind != decl::Kind::Archive) continue;
    // An archive's tree: the tree itself and every directory in it, not following links.
    std::error_code ec;
    size_t dirs = 0;
    add(path, "", r.id, true, want);
    for (fs::recursive_directory_iterator it(path, fs::directory_options::none, ec), end;
         !ec && it != end && dirs < kMaxTreeDirs; it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        add(it->path().string(), "", r.id, true, want);
        ++dirs;
      }
    }
  }
  // Drop the watches no longer wanted, then add (or refresh) the wanted ones.
  for (auto it = byWatch_.begin(); it != byWatch_.end();) {
    if (want.count(it->second.path)) {
      ++it;
      continue;
    }
    ::inotify_rm_watch(fd_.get(), it->first);
    it = byWatch_.erase(it);
  }
  std::map<int, Dir> now;
  unwatched_ = 0;
  for (auto& [path, dir] : want) {
    const int wd = ::inotify_add_watch(fd_.get(), path.c_str(), kMask);
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
