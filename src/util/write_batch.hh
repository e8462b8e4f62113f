// Durable file replacements made in batches: the atomicWriteAt of util/fs.hh,
// with its waits shared. One file at a time waits for an fsync of the file, then
// for one of its directory; a batch of a thousand waits twice: for the fsyncs of
// all its files issued together, then for those of the directories it touched
// (util/sync_many.hh). Only what the batch wrote is synced, never the file
// system: another program's unwritten data is its own business.
//
//   stage()   the new content under the target's temp name (fs.hh tempNameFor):
//             written, owner and mode set, its fsync begun on another thread;
//             not in place;
//   commit()  waits for every staged file's fsync, then every rename, then an
//             fsync of each directory renamed into or named by syncDirectory().
//
// What a crash leaves is what it leaves for one atomicWriteAt: every target the
// old or the new content, never part of one (nothing is renamed before the sync
// returned); temp files under the deterministic names a later cycle sweeps
// (removeLeftoversAt). A caller that records what it wrote records it only after
// commit() returned it in place: a record never claims a file not yet durable.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hh"
#include "util/fs.hh"
#include "util/sync_many.hh"

namespace mesh {

class WriteBatch {
 public:
  // Beyond either, the caller commits before staging more: a batch holds a
  // descriptor per directory, and its temp files are what a crash leaves behind.
  // Directories: at most this, and an eighth of the limit on open files
  // (util/open_files.hh); as many files are open while their fsyncs run.
  static constexpr size_t kMaxFiles = 1000;
  static constexpr size_t kMaxDirectories = 256;
  static size_t maxOpen();

  WriteBatch();
  ~WriteBatch();  // abandons what was not committed
  WriteBatch(const WriteBatch&) = delete;
  WriteBatch& operator=(const WriteBatch&) = delete;

  // Writes `content` beside `name` in the open directory `dir` (borrowed: the
  // batch keeps its own descriptor). Throws mesh::Error, leaving no temp file.
  void stage(int dir, const std::string& name, std::string_view content, mode_t mode,
             Ownership owner, const std::string& shown);

  // Also syncs the open directory `dir` at commit: one holding a directory made
  // for a staged file (its new entry durable with the file).
  void syncDirectory(int dir, const std::string& shown);

  size_t size() const { return files_.size(); }
  bool empty() const { return files_.empty(); }
  bool full() const { return files_.size() >= kMaxFiles || dirs_.size() >= maxOpen(); }

  // What commit() did with one staged file, in staging order: in place (and
  // durable), with its lstat after the rename; or not, with why (its temp file
  // is gone, the target as it was).
  struct Result {
    std::optional<std::string> error;
    struct stat st {};
  };
  // Moves every staged file into place durably and empties the batch. Errors are
  // per file; it throws only from a crash point (tests).
  std::vector<Result> commit();

  // Drops the files staged from index `from` on (their temp files removed), as
  // if never staged: a resource that staged them failed after all.
  void dropFrom(size_t from);

 private:
  struct Dir {
    dev_t dev;
    ino_t ino;
    Fd fd;
    bool sync;  // renamed into, or syncDirectory()
  };
  struct File {
    size_t dir;   // index in dirs_
    size_t sync;  // index of its fsync's result in syncs_
    std::string name, tmp, shown;
  };
  size_t dirIndex(int dir, const std::string& shown);
  void removeTemp(const File& f);

  std::vector<Dir> dirs_;
  std::vector<File> files_;
  SyncQueue syncs_;
};

}  // namespace mesh
