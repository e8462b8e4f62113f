#include "disk.hh"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mesh::sim::disk {
namespace {

sqlite3_vfs* unixVfs = nullptr;
sqlite3_vfs simVfs;
sqlite3_io_methods methods;

// Per store file (main db, WAL, rollback journal): its content as of its last
// fsync (nullopt: never synced since it was created, so a power cut loses it).
std::map<std::string, std::optional<std::string>> durable;
int failFrom = 0, writes = 0;
bool failed = false;
bool imaging = true;  // keep the durable images (off: no OS crash is played)

std::optional<std::string> readWhole(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw std::runtime_error("sim disk: cannot read " + path);
  }
  std::string out;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

bool writeFails() {
  if (failFrom == 0 || ++writes < failFrom) return false;
  failed = true;
  return true;
}

struct File {
  sqlite3_file base;  // first: SQLite sees this
  sqlite3_file* real;
  const char* path;  // valid until xClose (SQLite's promise for zName); null: untracked
};

sqlite3_file* real(sqlite3_file* f) {
  return reinterpret_cast<File*>(f)->real;
}

int xClose(sqlite3_file* f) {
  return real(f)->pMethods->xClose(real(f));
}
int xRead(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return real(f)->pMethods->xRead(real(f), buf, n, off);
}
int xWrite(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  if (reinterpret_cast<File*>(f)->path && writeFails()) return SQLITE_FULL;
  return real(f)->pMethods->xWrite(real(f), buf, n, off);
}
int xTruncate(sqlite3_file* f, sqlite3_int64 size) {
  return real(f)->pMethods->xTruncate(real(f), size);
}
int xSync(sqlite3_file* f, int flags) {
  const int rc = real(f)->pMethods->xSync(real(f), flags);
  if (rc == SQLITE_OK && imaging)
    if (const char* path = reinterpret_cast<File*>(f)->path) durable[path] = readWhole(path);
  return rc;
}
int xFileSize(sqlite3_file* f, sqlite3_int64* size) {
  return real(f)->pMethods->xFileSize(real(f), size);
}
int xLock(sqlite3_file* f, int level) {
  return real(f)->pMethods->xLock(real(f), level);
}
int xUnlock(sqlite3_file* f, int level) {
  return real(f)->pMethods->xUnlock(real(f), level);
}
int xCheckReservedLock(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int xFileControl(sqlite3_file* f, int op, void* arg) {
  return real(f)->pMethods->xFileControl(real(f), op, arg);
}
int xSectorSize(sqlite3_file* f) {
  return real(f)->pMethods->xSectorSize(real(f));
}
int xDeviceCharacteristics(sqlite3_file* f) {
  return real(f)->pMethods->xDeviceCharacteristics(real(f));
}
int xShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return real(f)->pMethods->xShmMap(real(f), page, size, extend, out);
}
int xShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}
void xShmBarrier(sqlite3_file* f) {
  real(f)->pMethods->xShmBarrier(real(f));
}
int xShmUnmap(sqlite3_file* f, int deleteFlag) {
  return real(f)->pMethods->xShmUnmap(real(f), deleteFlag);
}
int xFetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return real(f)->pMethods->xFetch(real(f), off, n, out);
}
int xUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return real(f)->pMethods->xUnfetch(real(f), off, p);
}

int xOpen(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* outFlags) {
  auto* file = reinterpret_cast<File*>(f);
  file->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(File));
  const bool tracked =
      name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL));
  file->path = tracked ? name : nullptr;
  // First seen: what is there now is on disk for good (written before the
  // simulation, or restored after its last OS crash).
  if (tracked && imaging && !durable.count(name)) durable[name] = readWhole(name);
  const int rc = unixVfs->xOpen(unixVfs, name, file->real, flags, outFlags);
  file->base.pMethods = file->real->pMethods ? &methods : nullptr;
  if (file->real->pMethods) methods.iVersion = file->real->pMethods->iVersion;
  return rc;
}

int xDelete(sqlite3_vfs*, const char* name, int syncDir) {
  const int rc = unixVfs->xDelete(unixVfs, name, syncDir);
  if (rc == SQLITE_OK) durable.erase(name);  // gone for good (taken as synced)
  return rc;
}

}  // namespace

void install() {
  unixVfs = sqlite3_vfs_find("unix");
  if (!unixVfs) throw std::runtime_error("sim disk: no unix VFS");
  simVfs = *unixVfs;
  simVfs.zName = "mesh-sim";
  simVfs.pNext = nullptr;
  simVfs.szOsFile = static_cast<int>(sizeof(File)) + unixVfs->szOsFile;
  simVfs.xOpen = xOpen;
  simVfs.xDelete = xDelete;
  methods = {3,
             xClose,
             xRead,
             xWrite,
             xTruncate,
             xSync,
             xFileSize,
             xLock,
             xUnlock,
             xCheckReservedLock,
             xFileControl,
             xSectorSize,
             xDeviceCharacteristics,
             xShmMap,
             xShmLock,
             xShmBarrier,
             xShmUnmap,
             xFetch,
             xUnfetch};
  if (sqlite3_vfs_register(&simVfs, 1) != SQLITE_OK)
    throw std::runtime_error("sim disk: cannot register the VFS");
}

Images osCrash() {
  return durable;
}

void restoreAfterOsCrash(const Images& images) {
  for (const auto& [path, content] : images) {
    if (!content) {
      ::unlink(path.c_str());
    } else {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
      if (fd < 0 ||
          ::write(fd, content->data(), content->size()) != static_cast<ssize_t>(content->size()))
        throw std::runtime_error("sim disk: cannot restore " + path);
      ::close(fd);
    }
    durable[path] = content;
    // SQLite's shared memory does not survive a reboot; the first open rebuilds it.
    if (::truncate((path + "-shm").c_str(), 0) != 0 && errno != ENOENT)
      throw std::runtime_error("sim disk: cannot empty " + path + "-shm");
  }
}

void keepImages(bool on) {
  imaging = on;
}

void forget(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-journal"}) durable.erase(path + suffix);
}

void failWritesFrom(int nth) {
  failFrom = nth;
  writes = 0;
  failed = false;
}

bool anyWriteFailed() {
  return failed;
}

int treeWriteFault(const char*) {
  return writeFails() ? ENOSPC : 0;
}

}  // namespace mesh::sim::disk
