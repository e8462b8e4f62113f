#include "util/fs.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <ctime>

#include "util/error.hh"
#include "util/fd.hh"

namespace mesh {

std::optional<struct stat> lstatPath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return st;
  if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
  throwSys(fmt::format("cannot inspect {}", path));
}

std::string parentOf(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string baseName(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void makeDirs(const std::string& path, mode_t mode) {
  if (path.empty() || path == "/" || path == ".") return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return;
    throw Error("cannot create directory {}: a non-directory is in the way", path);
  }
  makeDirs(parentOf(path), mode);
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    throwSys(fmt::format("cannot create directory {}", path));
}

std::vector<std::string> makeDirsTracked(const std::string& path, mode_t mode) {
  std::vector<std::string> missing;
  for (std::string p = path; !p.empty() && p != "/" && p != "."; p = parentOf(p)) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) break;
    missing.push_back(p);
  }
  std::vector<std::string> created;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), mode) == 0) {
      created.push_back(*it);
    } else if (errno != EEXIST) {
      int err = errno;
      removeCreatedDirs(created);
      throw SysError(err, fmt::format("cannot create directory {}", *it));
    }
  }
  return created;
}

void removeCreatedDirs(const std::vector<std::string>& created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) ::rmdir(it->c_str());
}

void syncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throwSys(fmt::format("cannot open directory {}", dir));
  if (::fsync(fd.get()) != 0) throwSys(fmt::format("cannot sync directory {}", dir));
}

static std::string tempNameBeside(const std::string& path) {
  uint32_t r = randombytes_random();
  return fmt::format("{}/.{}.mesh-tmp.{:08x}", parentOf(path), baseName(path), r);
}

void atomicWrite(const std::string& path, std::string_view content, mode_t mode, Ownership owner) {
  const std::string dir = parentOf(path);
  makeDirs(dir);
  std::string tmp;
  Fd fd;
  for (int attempt = 0; attempt < 16 && !fd; ++attempt) {
    tmp = tempNameBeside(path);
    fd = Fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd && errno != EEXIST) throwSys(fmt::format("cannot create a temp file in {}", dir));
  }
  if (!fd) throwSys(fmt::format("cannot create a temp file in {}", dir));
  Finally cleanup([&] { ::unlink(tmp.c_str()); });

  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSys(fmt::format("cannot write {}", tmp));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (owner.uid != static_cast<uid_t>(-1) || owner.gid != static_cast<gid_t>(-1)) {
    if (::fchown(fd.get(), owner.uid, owner.gid) != 0)
      throwSys(fmt::format("cannot set the owner of {}", path));
  }
  // After fchown: chown clears setuid/setgid bits.
  if (::fchmod(fd.get(), mode) != 0) throwSys(fmt::format("cannot set the mode of {}", path));
  if (::fsync(fd.get()) != 0) throwSys(fmt::format("cannot sync {}", tmp));
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throwSys(fmt::format("cannot move {} into place", path));
  cleanup.dismiss();
  syncDir(dir);
}

void atomicSymlink(const std::string& path, const std::string& target) {
  const std::string dir = parentOf(path);
  makeDirs(dir);
  std::string tmp;
  for (int attempt = 0;; ++attempt) {
    tmp = tempNameBeside(path);
    if (::symlink(target.c_str(), tmp.c_str()) == 0) break;
    if (errno != EEXIST || attempt > 15) throwSys(fmt::format("cannot create a link in {}", dir));
  }
  Finally cleanup([&] { ::unlink(tmp.c_str()); });
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throwSys(fmt::format("cannot move link {} into place", path));
  cleanup.dismiss();
  syncDir(dir);
}

std::optional<std::string> readFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    throwSys(fmt::format("cannot read {}", path));
  }
  std::string out;
  readChunks(fd.get(), path, [&](std::string_view chunk) { out.append(chunk); });
  return out;
}

void readChunks(int fd, const std::string& shown,
                const std::function<void(std::string_view)>& chunk) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSys(fmt::format("cannot read {}", shown));
    }
    if (n == 0) break;
    chunk(std::string_view(buf, static_cast<size_t>(n)));
  }
}

static void removeAt(int dirfd, const char* name, const std::string& shown) {
  struct stat st {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;
    throwSys(fmt::format("cannot inspect {}", shown));
  }
  if (S_ISDIR(st.st_mode)) {
    Fd sub(::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) throwSys(fmt::format("cannot open {}", shown));
    DIR* d = ::fdopendir(sub.get());
    if (!d) throwSys(fmt::format("cannot list {}", shown));
    int subfd = sub.release();
    Finally closeDir([&] { ::closedir(d); });
    while (auto* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      removeAt(subfd, e->d_name, shown + "/" + std::string(n));
    }
    if (::unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
      throwSys(fmt::format("cannot remove {}", shown));
  } else if (::unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) {
    throwSys(fmt::format("cannot remove {}", shown));
  }
}

void removeTree(const std::string& path) {
  Fd dir(::open(parentOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT) return;
    throwSys(fmt::format("cannot open {}", parentOf(path)));
  }
  removeAt(dir.get(), baseName(path).c_str(), path);
}

Fingerprint Fingerprint::of(const struct stat& st) {
  Fingerprint f;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtimeNs = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.ctimeNs = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  f.mode = st.st_mode;
  f.uid = st.st_uid;
  f.gid = st.st_gid;
  return f;
}

std::string Fingerprint::str() const {
  return fmt::format("{}:{}:{}:{}:{}:{:o}:{}:{}", dev, ino, size, mtimeNs, ctimeNs, mode, uid, gid);
}

std::optional<Fingerprint> Fingerprint::parse(std::string_view text) {
  // The hot path of a no-op cycle (once per file): from_chars, no allocation.
  Fingerprint f;
  const char* p = text.data();
  const char* end = p + text.size();
  auto field = [&](auto& out, int base, bool last) {
    auto [next, ec] = std::from_chars(p, end, out, base);
    if (ec != std::errc() || next == p) return false;
    p = next;
    if (last) return p == end;
    if (p == end || *p != ':') return false;
    ++p;
    return true;
  };
  if (field(f.dev, 10, false) && field(f.ino, 10, false) && field(f.size, 10, false) &&
      field(f.mtimeNs, 10, false) && field(f.ctimeNs, 10, false) && field(f.mode, 8, false) &&
      field(f.uid, 10, false) && field(f.gid, 10, true))
    return f;
  return std::nullopt;
}

bool fingerprintIsRacy(const struct stat& st) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t nowNs = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  const int64_t ctimeNs = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  const int64_t mtimeNs = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  // Kernel timestamps come from a coarse clock (a jiffy, up to 10 ms); stay well clear.
  constexpr int64_t kSlackNs = 1000000000;
  return nowNs - ctimeNs < kSlackNs || nowNs - mtimeNs < kSlackNs;
}

}  // namespace mesh
