#include "state/reader_vfs.hh"

#include <sqlite3.h>

#include <mutex>

namespace mesh::state {

namespace {

constexpr const char* kName = "mesh-host-reader";

sqlite3_vfs* base = nullptr;
sqlite3_vfs vfs{};
sqlite3_io_methods methods{};

struct File {
  sqlite3_file self;
  sqlite3_file* real;  // the system VFS's file, allocated right after this
};

sqlite3_file* real(sqlite3_file* f) {
  return reinterpret_cast<File*>(f)->real;
}

int xClose(sqlite3_file* f) {
  int rc = real(f)->pMethods->xClose(real(f));
  f->pMethods = nullptr;
  return rc;
}
int xRead(sqlite3_file* f, void* out, int n, sqlite3_int64 at) {
  return real(f)->pMethods->xRead(real(f), out, n, at);
}
int xWrite(sqlite3_file* f, const void* in, int n, sqlite3_int64 at) {
  return real(f)->pMethods->xWrite(real(f), in, n, at);
}
int xTruncate(sqlite3_file* f, sqlite3_int64 size) {
  return real(f)->pMethods->xTruncate(real(f), size);
}
int xSync(sqlite3_file* f, int flags) {
  return real(f)->pMethods->xSync(real(f), flags);
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
// The shared memory "exists but cannot be used by this process": SQLite then
// builds the WAL index in its own memory for each read transaction.
int xShmMap(sqlite3_file*, int, int, int, void volatile** out) {
  *out = nullptr;
  return SQLITE_READONLY_CANTINIT;
}
int xShmLock(sqlite3_file*, int, int, int) {
  return SQLITE_OK;
}
void xShmBarrier(sqlite3_file*) {
  __sync_synchronize();
}
int xShmUnmap(sqlite3_file*, int) {
  return SQLITE_OK;
}

int xOpen(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* outFlags) {
  auto* file = reinterpret_cast<File*>(f);
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  file->self.pMethods = nullptr;
  int rc = base->xOpen(base, name, file->real, flags, outFlags);
  if (file->real->pMethods) file->self.pMethods = &methods;
  return rc;
}

}  // namespace

const char* readerVfs() {
  static std::once_flag once;
  std::call_once(once, [] {
    base = sqlite3_vfs_find(nullptr);
    vfs = *base;
    vfs.iVersion = base->iVersion;
    vfs.szOsFile = static_cast<int>(sizeof(File)) + base->szOsFile;
    vfs.zName = kName;
    vfs.pNext = nullptr;
    vfs.xOpen = xOpen;
    // Version 2: no memory-mapped reads, whose xFetch would bypass nothing here
    // but is not needed either.
    methods.iVersion = 2;
    methods.xClose = xClose;
    methods.xRead = xRead;
    methods.xWrite = xWrite;
    methods.xTruncate = xTruncate;
    methods.xSync = xSync;
    methods.xFileSize = xFileSize;
    methods.xLock = xLock;
    methods.xUnlock = xUnlock;
    methods.xCheckReservedLock = xCheckReservedLock;
    methods.xFileControl = xFileControl;
    methods.xSectorSize = xSectorSize;
    methods.xDeviceCharacteristics = xDeviceCharacteristics;
    methods.xShmMap = xShmMap;
    methods.xShmLock = xShmLock;
    methods.xShmBarrier = xShmBarrier;
    methods.xShmUnmap = xShmUnmap;
    sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
  });
  return kName;
}

}  // namespace mesh::state
