// unpack() and readManifest(): the disk side of extraction. Every path is opened
// relative to the destination, one component at a time, never following a link,
// so no entry can reach outside it whatever the archive holds.
#include "bundle/unpack.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "bundle/path.hh"
#include "bundle/scan.hh"
#include "util/error.hh"
#include "util/faults.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/open_files.hh"
#include "util/sync_many.hh"

namespace mesh::bundle {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

class DiskSink : public Sink {
 public:
  DiskSink(Fd root, mode_t rootMode) : root_(std::move(root)), rootMode_(rootMode) {}

  void makeDirectory(const std::string& path) override {
    std::string name;
    int dir = parentFd(path, name);
    // 0700 while unpacking: nobody else can reach in; finish() sets the real modes.
    if (::mkdirat(dir, name.c_str(), 0700) != 0) throwSys(fmt::format("cannot create {}", path));
  }

  void openFile(const std::string& path) override {
    std::string name;
    int dir = parentFd(path, name);
    file_ =
        Fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file_) throwSys(fmt::format("cannot create {}", path));
    filePath_ = path;
    fileEnd_ = 0;
  }

  void writeFile(uint64_t offset, std::string_view data) override {
    if (int err = writeFault(filePath_.c_str()); err != 0)
      throw SysError(err, fmt::format("cannot write {}", filePath_));
    while (!data.empty()) {
      ssize_t n = ::pwrite(file_.get(), data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        throwSys(fmt::format("cannot write {}", filePath_));
      }
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    fileEnd_ = std::max(fileEnd_, offset);
  }

  void closeFile(mode_t mode, uint64_t size, std::optional<timespec> mtime) override {
    if (size > fileEnd_ && ::ftruncate(file_.get(), static_cast<off_t>(size)) != 0)
      throwSys(fmt::format("cannot extend {}", filePath_));
    if (::fchmod(file_.get(), mode) != 0)
      throwSys(fmt::format("cannot set the mode of {}", filePath_));
    if (mtime) {
      const timespec times[2] = {{0, UTIME_OMIT}, *mtime};
      if (::futimens(file_.get(), times) != 0)
        throwSys(fmt::format("cannot set the time of {}", filePath_));
    }
    // Its fsync starts now, beside the next files' writing; the queue closes it.
    syncs_.add(std::move(file_));
    synced_.push_back(filePath_);
  }

  void makeSymlink(const std::string& path, const std::string& target) override {
    std::string name;
    int dir = parentFd(path, name);
    if (::symlinkat(target.c_str(), dir, name.c_str()) != 0)
      throwSys(fmt::format("cannot create link {}", path));
  }

  void makeHardLink(const std::string& path, const std::string& existing) override {
    Fd from = openDir(std::string(parentPath(existing)));
    const std::string fromName(lastComponent(existing));
    std::string name;
    int dir = parentFd(path, name);
    // No AT_SYMLINK_FOLLOW: `existing` itself is never dereferenced.
    if (::linkat(from.get(), fromName.c_str(), dir, name.c_str(), 0) != 0)
      throwSys(fmt::format("cannot link {} to {}", path, existing));
  }

  void finish(const Manifest& m) override {
    cachedDir_.reset();
    // Deepest first, so a directory made unwritable or unsearchable cannot stop
    // the ones below it from being set. Each then synced: its entries and mode.
    for (auto e = m.entries.rbegin(); e != m.entries.rend(); ++e) {
      if (e->type != Entry::Type::Directory) continue;
      Fd dir = openDir(e->path);
      if (::fchmod(dir.get(), e->mode) != 0)
        throwSys(fmt::format("cannot set the mode of {}", e->path));
      syncs_.add(std::move(dir));
      synced_.push_back(e->path);
    }
    if (::fchmod(root_.get(), rootMode_) != 0) throwSys("cannot set the mode of the bundle's root");
    // Durable: every file and directory unpacked, the root last. Only those: the
    // file system's other dirty data is not ours to flush.
    const auto results = syncs_.wait();
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i] != 0) throw SysError(results[i], fmt::format("cannot sync {}", synced_[i]));
    if (::fsync(root_.get()) != 0) throwSys("cannot sync the unpacked bundle");
  }

 private:
  // Opens a directory of the tree, component by component, never following a link.
  Fd openDir(const std::string& path) const {
    Fd cur(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
    if (!cur) throwSys("cannot duplicate a descriptor");
    std::string walked;
    for (auto part : splitPath(path)) {
      walked += walked.empty() ? "" : "/";
      walked += part;
      const std::string component(part);
      Fd next(::openat(cur.get(), component.c_str(), kDirFlags));
      if (!next) throwSys(fmt::format("cannot open directory {}", walked));
      cur = std::move(next);
    }
    return cur;
  }

  // The directory holding `path` (kept open for the entries that follow, which
  // mostly share it) and its last component in `name`.
  FdRef parentFd(const std::string& path, std::string& name) {
    name = std::string(lastComponent(path));
    const std::string parent(parentPath(path));
    if (!cachedDir_ || cachedPath_ != parent) {
      cachedDir_.reset();
      cachedDir_ = openDir(parent);
      cachedPath_ = parent;
    }
    return cachedDir_;
  }

  Fd root_;
  mode_t rootMode_;
  Fd cachedDir_;
  std::string cachedPath_;
  Fd file_;
  std::string filePath_;
  uint64_t fileEnd_ = 0;
  // At most 256 written and not yet synced are open, and an eighth of the
  // limit on open files (util/open_files.hh).
  SyncQueue syncs_{openFilesShare(256, 8)};
  std::vector<std::string> synced_;  // what each of its results is of
};

}  // namespace

Manifest unpack(const std::string& archivePath, int dir, const std::string& name,
                const Limits& limits, const std::string& shown, const ByteProgress& progress) {
  const std::string& dest = shown.empty() ? name : shown;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error("archive {}: cannot unpack into '{}': not one path component", archivePath, name);
  if (::mkdirat(dir, name.c_str(), 0700) != 0) {
    if (errno == EEXIST)
      throw Error("archive {}: cannot unpack into {}: it already exists", archivePath, dest);
    throwSys(fmt::format("archive {}: cannot create {}", archivePath, dest));
  }
  Finally cleanup([&] {
    try {
      removeTreeAt(dir, name, dest);
    } catch (const Error&) {  // the original error matters more
    }
  });
  // O_NOFOLLOW: what was just made, not a link swapped in since.
  Fd root(::openat(dir, name.c_str(), kDirFlags));
  if (!root) throwSys(fmt::format("archive {}: cannot open {}", archivePath, dest));
  Manifest m;
  {
    DiskSink sink(std::move(root), limits.rootMode);
    m = scanArchive(archivePath, limits, &sink, progress, "unpacking " + dest);
  }
  cleanup.dismiss();
  return m;
}

Manifest readManifest(const std::string& archivePath, const Limits& limits) {
  return scanArchive(archivePath, limits, nullptr);
}

}  // namespace mesh::bundle
