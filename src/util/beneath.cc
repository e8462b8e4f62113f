#include "util/beneath.hh"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace mesh {

namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// One syscall for the whole walk where the kernel has openat2 (5.6+); -1 with
// errno otherwise, and the caller walks component by component.
int openBeneath(int top, const std::string& rel) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, top, rel.c_str(), &how, sizeof how));
#else
  errno = ENOSYS;
  return -1;
#endif
}

const char* typeWord(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISLNK(mode)) return "symbolic link";
  return "special file";
}

}  // namespace

std::pair<std::string_view, std::string_view> splitParent(std::string_view rel) {
  auto slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {std::string_view(), rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

Beneath::Beneath(const std::string& top, std::string shownPrefix)
    : top_(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
      shownPrefix_(std::move(shownPrefix)) {
  if (!top_) throwSys(fmt::format("cannot open {}", top));
}

std::string Beneath::shown(std::string_view rel) const {
  return fmt::format("{}/{}", shownPrefix_, rel);
}

std::optional<Fd> Beneath::openDir(std::string_view rel) const {
  if (rel.empty()) return Fd(::fcntl(top_.get(), F_DUPFD_CLOEXEC, 0));
  Fd fast(openBeneath(top_.get(), std::string(rel)));
  if (fast) return fast;
  if (errno == ENOENT) return std::nullopt;
  // A link, a non-directory, another file system, or no openat2: the walk says
  // which component, or finds the race over.
  return walk(rel, false, nullptr);
}

Fd Beneath::makeDirs(std::string_view rel, std::vector<std::string>* created, Synced synced) const {
  if (auto fd = openDir(rel)) return std::move(*fd);
  return std::move(*walk(rel, true, created, synced));
}

std::optional<Fd> Beneath::walk(std::string_view rel, bool create,
                                std::vector<std::string>* created, Synced synced) const {
  Fd cur(::fcntl(top_.get(), F_DUPFD_CLOEXEC, 0));
  if (!cur) throwSys("cannot duplicate a descriptor");
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    const std::string component(rel.substr(start, end - start));
    const std::string_view walked = rel.substr(0, end);
    start = end + 1;
    if (component.empty() || component == "." || component == "..")
      throw PathRefused("{} is not a normalised path", shown(rel));
    for (int attempt = 0;; ++attempt) {
      Fd next(::openat(cur.get(), component.c_str(), kDirFlags));
      if (next) {
        cur = std::move(next);
        break;
      }
      if (errno == ELOOP || errno == ENOTDIR) refuse(cur.get(), component, walked);
      if (errno != ENOENT) throwSys(fmt::format("cannot open {}", shown(walked)));
      if (!create) return std::nullopt;
      // 0700 until it is owned and moded as wanted: nobody can reach in meanwhile.
      if (::mkdirat(cur.get(), component.c_str(), 0700) != 0) {
        if (errno == EEXIST && attempt < 3) continue;  // made by someone else: open it
        throwSys(fmt::format("cannot create directory {}", shown(walked)));
      }
      next = Fd(::openat(cur.get(), component.c_str(), kDirFlags));
      if (!next) throwSys(fmt::format("cannot open directory {}", shown(walked)));
      if (::geteuid() == 0 && ::fchown(next.get(), 0, 0) != 0)
        throwSys(fmt::format("cannot set the owner of {}", shown(walked)));
      if (::fchmod(next.get(), 0755) != 0)
        throwSys(fmt::format("cannot set the mode of {}", shown(walked)));
      if (synced == Synced::Each && ::fsync(cur.get()) != 0)
        throwSys(fmt::format("cannot sync {}", shown(walked)));
      if (created) created->emplace_back(walked);
      cur = std::move(next);
      break;
    }
  }
  return cur;
}

void Beneath::refuse(int dir, const std::string& component, std::string_view walked) const {
  struct stat st {};
  if (::fstatat(dir, component.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    throwSys(fmt::format("cannot inspect {}", shown(walked)));
  if (S_ISDIR(st.st_mode))  // swapped back while we looked
    throw PathRefused("{} changed while being opened; try again", shown(walked));
  PathRefused refused =
      S_ISLNK(st.st_mode)
          ? PathRefused(
                "{} is a symbolic link (owner uid {}); mesh-host does not follow links "
                "inside declared paths: remove the link or declare the path it points to",
                shown(walked), st.st_uid)
          : PathRefused(
                "{} is a {} (owner uid {}) where a directory is needed; remove it or declare "
                "another path",
                shown(walked), typeWord(st.st_mode), st.st_uid);
  refused.found = S_ISLNK(st.st_mode) ? PathRefused::Found::Link : PathRefused::Found::NotDirectory;
  refused.component = shown(walked);
  throw refused;
}

void Beneath::removeCreated(const std::vector<std::string>& created) const {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    auto [parent, name] = splitParent(*it);
    try {
      if (auto dir = openDir(parent))
        ::unlinkat(dir->get(), std::string(name).c_str(), AT_REMOVEDIR);
    } catch (const Error&) {  // best effort: the original error matters more
    }
  }
}

}  // namespace mesh
