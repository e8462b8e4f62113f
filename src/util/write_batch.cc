#include "util/write_batch.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hh"
#include "util/faults.hh"
#include "util/open_files.hh"
#include "util/sync_many.hh"

namespace mesh {

size_t WriteBatch::maxOpen() {
  return openFilesShare(kMaxDirectories, 8);
}

WriteBatch::WriteBatch() : syncs_(maxOpen()) {}

WriteBatch::~WriteBatch() {
  dropFrom(0);
}

size_t WriteBatch::dirIndex(int dir, const std::string& shown) {
  struct stat st {};
  if (::fstat(dir, &st) != 0) throwSys(fmt::format("cannot inspect the directory of {}", shown));
  for (size_t i = 0; i < dirs_.size(); ++i)
    if (dirs_[i].dev == st.st_dev && dirs_[i].ino == st.st_ino) return i;
  Fd own(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!own) throwSys(fmt::format("cannot keep the directory of {} open", shown));
  dirs_.push_back({st.st_dev, st.st_ino, std::move(own), false});
  return dirs_.size() - 1;
}

void WriteBatch::stage(int dir, const std::string& name, std::string_view content, mode_t mode,
                       Ownership owner, const std::string& shown) {
  const size_t d = dirIndex(dir, shown);
  Fd written;
  const std::string tmp =
      writeTempAt(dirs_[d].fd.get(), name, content, mode, owner, shown, &written);
  // Its fsync starts now, beside the next files' writing (util/sync_many.hh).
  const size_t sync = syncs_.add(std::move(written));
  files_.push_back({d, sync, name, tmp, shown});
}

void WriteBatch::removeTemp(const File& f) {
  ::unlinkat(dirs_[f.dir].fd.get(), f.tmp.c_str(), 0);
}

void WriteBatch::dropFrom(size_t from) {
  for (size_t i = from; i < files_.size(); ++i) removeTemp(files_[i]);
  if (from < files_.size()) files_.resize(from);
  if (files_.empty()) {
    dirs_.clear();
    (void)syncs_.wait();  // the dropped files' fsyncs: nobody's now
  }
}

void WriteBatch::syncDirectory(int dir, const std::string& shown) {
  dirs_[dirIndex(dir, shown)].sync = true;
}

std::vector<WriteBatch::Result> WriteBatch::commit() {
  std::vector<Result> out(files_.size());
  if (files_.empty() && dirs_.empty()) return out;
  // Every temp file durable first: the fsyncs begun as each was staged, done.
  const auto synced = syncs_.wait();
  for (size_t i = 0; i < files_.size(); ++i)
    if (const int err = synced[files_[i].sync]; err != 0)
      out[i].error = fmt::format("cannot sync {}: {}", files_[i].shown, std::strerror(err));
  crashPoint(crash::kBeforeRename);
  for (size_t i = 0; i < files_.size(); ++i) {
    const File& f = files_[i];
    const int dir = dirs_[f.dir].fd.get();
    if (!out[i].error && ::renameat(dir, f.tmp.c_str(), dir, f.name.c_str()) != 0)
      out[i].error = fmt::format("cannot move {} into place: {}", f.shown, std::strerror(errno));
    if (out[i].error) {
      removeTemp(f);
      continue;
    }
    dirs_[f.dir].sync = true;
  }
  for (size_t i = 0; i < files_.size(); ++i) {
    if (out[i].error) continue;
    const File& f = files_[i];
    if (::fstatat(dirs_[f.dir].fd.get(), f.name.c_str(), &out[i].st, AT_SYMLINK_NOFOLLOW) != 0)
      out[i].error = fmt::format("cannot inspect {}: {}", f.shown, std::strerror(errno));
  }
  // Then the renames durable: an fsync of each directory renamed into, and of
  // each that holds a directory made for this batch (syncDirectory), together.
  // The batch is done with their descriptors: the queue takes and closes them.
  std::vector<size_t> touched;
  for (size_t d = 0; d < dirs_.size(); ++d)
    if (dirs_[d].sync) {
      touched.push_back(d);
      syncs_.add(std::move(dirs_[d].fd));
    }
  const auto dirSynced = syncs_.wait();
  // A failed sync fails the files it was to make durable: those renamed into it.
  for (size_t t = 0; t < touched.size(); ++t) {
    if (dirSynced[t] == 0) continue;
    for (size_t i = 0; i < files_.size(); ++i)
      if (!out[i].error && files_[i].dir == touched[t])
        out[i].error = fmt::format("cannot sync the directory of {}: {}", files_[i].shown,
                                   std::strerror(dirSynced[t]));
  }
  files_.clear();
  dirs_.clear();
  crashPoint(crash::kBatchInPlace);
  return out;
}

}  // namespace mesh
