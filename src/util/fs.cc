#include "util/fs.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <ctime>

#include "util/digest.hh"
#include "util/error.hh"
#include "util/faults.hh"
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

namespace {

// Creates the temp file `tmp` in `dir`. A deterministic name already taken is a
// leftover of a write that was cut short (or planted): it goes, once.
Fd createTemp(int dir, const std::string& tmp, bool deterministic, const std::string& shown) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    Fd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd) return fd;
    if (errno != EEXIST || !deterministic) break;
    removeTreeAt(dir, tmp, shown + " (leftover)");
  }
  throwSys(fmt::format("cannot create a temp file beside {}", shown));
}

void writeAll(int fd, std::string_view content, const std::string& shown) {
  if (int err = writeFault(shown.c_str()); err != 0)
    throw SysError(err, fmt::format("cannot write {}", shown));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSys(fmt::format("cannot write {}", shown));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// Writes `content` to the new file `tmp`, then sets owner and mode; the temp
// file is removed on any error.
Fd writeTemp(int dir, const std::string& tmp, bool deterministic, std::string_view content,
             mode_t mode, Ownership owner, const std::string& shown) {
  Fd fd = createTemp(dir, tmp, deterministic, shown);
  Finally cleanup([&] { ::unlinkat(dir, tmp.c_str(), 0); });
  writeAll(fd.get(), content, shown);
  if (owner.uid != static_cast<uid_t>(-1) || owner.gid != static_cast<gid_t>(-1)) {
    if (::fchown(fd.get(), owner.uid, owner.gid) != 0)
      throwSys(fmt::format("cannot set the owner of {}", shown));
  }
  // After fchown: chown clears setuid/setgid bits.
  if (::fchmod(fd.get(), mode) != 0) throwSys(fmt::format("cannot set the mode of {}", shown));
  cleanup.dismiss();
  return fd;
}

// Writes `content` to the new file `tmp` and renames it over `name`, then syncs
// the directory; the temp file is removed on any error.
void writeAndRename(int dir, const std::string& tmp, bool deterministic, const std::string& name,
                    std::string_view content, mode_t mode, Ownership owner,
                    const std::string& shown) {
  Fd fd = writeTemp(dir, tmp, deterministic, content, mode, owner, shown);
  Finally cleanup([&] { ::unlinkat(dir, tmp.c_str(), 0); });
  if (::fsync(fd.get()) != 0) throwSys(fmt::format("cannot sync {}", shown));
  crashPoint(crash::kBeforeRename);
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0)
    throwSys(fmt::format("cannot move {} into place", shown));
  cleanup.dismiss();
  syncFd(dir, shown);
}

std::string randomTempName() {
  return fmt::format(".mesh-tmp.{:08x}{:08x}", randombytes_random(), randombytes_random());
}

}  // namespace

std::string tempNameFor(std::string_view name, std::string_view tag) {
  return fmt::format(".mesh-{}.{}", tag, Digest::ofBytes(name).hex().substr(0, 16));
}

bool isTempName(std::string_view entry, std::string_view tag) {
  const std::string prefix = fmt::format(".mesh-{}.", tag);
  return entry.size() == prefix.size() + 16 && entry.starts_with(prefix) &&
         entry.find_first_not_of("0123456789abcdef", prefix.size()) == std::string_view::npos;
}

void atomicWrite(const std::string& path, std::string_view content, mode_t mode, Ownership owner) {
  const std::string dir = parentOf(path);
  makeDirs(dir);
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) throwSys(fmt::format("cannot open directory {}", dir));
  writeAndRename(d.get(), randomTempName(), false, baseName(path), content, mode, owner, path);
}

void atomicWriteAt(int dir, const std::string& name, std::string_view content, mode_t mode,
                   Ownership owner, const std::string& shown) {
  writeAndRename(dir, tempNameFor(name, "tmp"), true, name, content, mode, owner, shown);
}

std::string writeTempAt(int dir, const std::string& name, std::string_view content, mode_t mode,
                        Ownership owner, const std::string& shown, Fd* kept) {
  std::string tmp = tempNameFor(name, "tmp");
  Fd fd = writeTemp(dir, tmp, true, content, mode, owner, shown);
  if (kept) *kept = std::move(fd);
  return tmp;
}

void atomicSymlink(const std::string& path, const std::string& target) {
  const std::string dir = parentOf(path);
  makeDirs(dir);
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) throwSys(fmt::format("cannot open directory {}", dir));
  atomicSymlinkAt(d.get(), baseName(path), target, path);
}

void atomicSymlinkAt(int dir, const std::string& name, const std::string& target,
                     const std::string& shown) {
  const std::string tmp = tempNameFor(name, "tmp");
  for (int attempt = 0;; ++attempt) {
    if (::symlinkat(target.c_str(), dir, tmp.c_str()) == 0) break;
    if (errno != EEXIST || attempt > 2)
      throwSys(fmt::format("cannot create a link beside {}", shown));
    removeTreeAt(dir, tmp, shown + " (leftover)");
  }
  Finally cleanup([&] { ::unlinkat(dir, tmp.c_str(), 0); });
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0)
    throwSys(fmt::format("cannot move link {} into place", shown));
  cleanup.dismiss();
  syncFd(dir, shown);
}

bool removeLeftoversAt(int dir, const std::string& name, const std::string& shown) {
  bool any = false;
  for (const char* tag : {"tmp", "new"}) {
    const std::string leftover = tempNameFor(name, tag);
    if (!statAt(dir, leftover, shown)) continue;
    removeTreeAt(dir, leftover, shown + " (leftover)");
    any = true;
  }
  if (any) syncFd(dir, shown);
  return any;
}

std::optional<struct stat> statAt(int dir, const std::string& name, const std::string& shown) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return st;
  if (errno == ENOENT) return std::nullopt;
  throwSys(fmt::format("cannot inspect {}", shown));
}

std::optional<Fd> openFileAt(int dir, const std::string& name, const std::string& shown) {
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) {
    if (errno == ENOENT || errno == ELOOP) return std::nullopt;
    throwSys(fmt::format("cannot read {}", shown));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", shown));
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  return fd;
}

std::optional<std::string> readLinkAt(int dir, const std::string& name, const std::string& shown) {
  std::string buf(4096, '\0');
  ssize_t n = ::readlinkat(dir, name.c_str(), buf.data(), buf.size());
  if (n < 0) {
    if (errno == ENOENT || errno == EINVAL) return std::nullopt;
    throwSys(fmt::format("cannot read link {}", shown));
  }
  buf.resize(static_cast<size_t>(n));
  return buf;
}

void syncFd(int fd, const std::string& shown) {
  if (::fsync(fd) != 0) throwSys(fmt::format("cannot sync {}", shown));
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

std::string readAll(int fd, const std::string& shown) {
  if (::lseek(fd, 0, SEEK_SET) != 0) throwSys(fmt::format("cannot read {}", shown));
  std::string out;
  readChunks(fd, shown, [&](std::string_view chunk) { out.append(chunk); });
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

namespace {

void removeAt(int dirfd, const char* name, const std::string& shown) {
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

}  // namespace

void removeTreeAt(int dir, const std::string& name, const std::string& shown) {
  removeAt(dir, name.c_str(), shown);
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
  char text[kMaxText];
  return std::string(text, write(text));
}

size_t Fingerprint::write(char* out) const {
  // "dev:ino:size:mtimeNs:ctimeNs:mode(octal):uid:gid", as fmt's "{}" and "{:o}"
  // wrote it before: records written then still compare equal.
  char* p = out;
  char* const end = out + kMaxText;
  auto field = [&](auto v, int base, bool last) {
    p = std::to_chars(p, end, v, base).ptr;
    if (!last) *p++ = ':';
  };
  field(dev, 10, false);
  field(ino, 10, false);
  field(size, 10, false);
  field(mtimeNs, 10, false);
  field(ctimeNs, 10, false);
  field(mode, 8, false);
  field(uid, 10, false);
  field(gid, 10, true);
  return static_cast<size_t>(p - out);
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

bool Fingerprint::is(std::string_view text) const {
  // The hot path of a no-op cycle (once per file): this fingerprint's own text,
  // written on the stack, compared. A record written otherwise (never by this
  // program) is not taken as the same: the file is read and hashed instead.
  char own[kMaxText];
  return text == std::string_view(own, write(own));
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
