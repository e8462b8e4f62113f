#include "bundle/scan.hh"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <deque>
#include <map>
#include <memory>

#include "bundle/path.hh"
#include "util/error.hh"

namespace mesh::bundle {
namespace {

constexpr int kMaxLinkHops = 40;  // as the kernel's ELOOP limit

class Scanner {
 public:
  Scanner(const std::string& archivePath, const Limits& limits, Sink* sink,
          const ByteProgress& progress, std::string_view what)
      : archivePath_(archivePath), limits_(limits), sink_(sink), progress_(progress), what_(what) {}

  Manifest run();

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw Error("archive {}: entry '{}': {}", archivePath_, name_, why);
  }
  std::string archiveError() const {
    const char* s = archive_error_string(a_.get());
    return s ? s : "unknown error";
  }
  void addEntry(archive_entry* e);
  // Makes sure `path` may be created: no duplicate, parents are directories
  // (made when missing). True when `path` is an existing directory and `isDir`.
  bool prepare(const std::string& path, bool isDir);
  void ensureDirectory(std::string_view dir);
  void addFile(const std::string& path, archive_entry* e);
  void addSymlink(const std::string& path, archive_entry* e);
  void addHardLink(const std::string& path, const char* rawTarget, archive_entry* e);
  void chargeBytes(uint64_t n);
  bool staysInside(const std::string& linkPath, const std::string& target) const;
  // The archive's permission bits as unpacked: `allowed` of them (no setuid or
  // setgid), without group and world write unless limits.keepModes.
  mode_t modeOf(archive_entry* e, mode_t allowed) const {
    const mode_t mode = archive_entry_perm(e) & allowed;
    return limits_.keepModes ? mode : mode & ~mode_t{S_IWGRP | S_IWOTH};
  }

  // Tells progress_ how much of the archive file has been read.
  void report() {
    if (progress_)
      progress_(what_, static_cast<uint64_t>(archive_filter_bytes(a_.get(), -1)), size_);
  }

  const std::string& archivePath_;
  const Limits limits_;
  Sink* sink_;
  const ByteProgress& progress_;
  std::string_view what_;
  uint64_t size_ = 0;  // the archive file's, for progress_
  std::unique_ptr<archive, decltype(&archive_read_free)> a_{archive_read_new(), &archive_read_free};
  std::map<std::string, Entry> tree_;
  uint64_t entries_ = 0;
  uint64_t bytes_ = 0;
  std::string name_;  // the current entry's name as the archive spells it
};

Entry directoryEntry(const std::string& path, mode_t mode) {
  Entry e;
  e.path = path;
  e.type = Entry::Type::Directory;
  e.mode = mode;
  return e;
}

const char* utf8OrRaw(const char* utf8, const char* raw) {
  return utf8 ? utf8 : raw;
}

Manifest Scanner::run() {
  if (!a_) throw Error("archive {}: out of memory", archivePath_);
  archive_read_support_filter_all(a_.get());
  archive_read_support_format_all(a_.get());
  if (archive_read_open_filename(a_.get(), archivePath_.c_str(), 1 << 16) != ARCHIVE_OK)
    throw Error("archive {}: cannot open: {}", archivePath_, archiveError());
  if (progress_) {
    struct stat st {};
    if (::stat(archivePath_.c_str(), &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
  }
  for (;;) {
    archive_entry* e = nullptr;
    int r = archive_read_next_header(a_.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      throw Error("archive {}: cannot read{}: {}", archivePath_,
                  name_.empty() ? std::string() : fmt::format(" past entry '{}'", name_),
                  archiveError());
    }
    try {
      addEntry(e);
    } catch (const SysError& err) {
      refuse(err.what());
    }
  }
  for (const auto& [path, entry] : tree_) {
    if (entry.type != Entry::Type::Symlink) continue;
    name_ = path;
    if (!staysInside(path, entry.target))
      refuse(fmt::format("symlink target '{}' leaves the bundle or loops", entry.target));
  }
  Manifest m;
  m.entries.reserve(tree_.size());
  for (auto& [path, entry] : tree_) m.entries.push_back(std::move(entry));
  if (sink_) {
    try {
      sink_->finish(m);
    } catch (const SysError& err) {
      throw Error("archive {}: {}", archivePath_, err.what());
    }
  }
  return m;
}

void Scanner::addEntry(archive_entry* e) {
  const char* raw = utf8OrRaw(archive_entry_pathname_utf8(e), archive_entry_pathname(e));
  name_ = raw ? raw : "";
  if (++entries_ > limits_.maxEntries)
    refuse(fmt::format("archive exceeds {} entries", limits_.maxEntries));
  auto norm = normaliseEntryName(name_);
  if (auto* bad = std::get_if<BadName>(&norm)) refuse(bad->why);
  const std::string path = std::get<std::string>(norm);

  const mode_t type = archive_entry_filetype(e);
  const char* hardlink = utf8OrRaw(archive_entry_hardlink_utf8(e), archive_entry_hardlink(e));
  if (path.empty()) {
    if (type == AE_IFDIR && !hardlink) return;  // "./": the root, made by us
    refuse("entry names the bundle's root");
  }
  if (hardlink) return addHardLink(path, hardlink, e);
  switch (type) {
    case AE_IFDIR: {
      const mode_t mode = modeOf(e, 07777 & ~mode_t{S_ISUID | S_ISGID});  // sticky kept
      if (prepare(path, true)) {
        tree_[path].mode = mode;  // a repeated directory entry only restates its mode
        return;
      }
      tree_[path] = directoryEntry(path, mode);
      if (sink_) sink_->makeDirectory(path);
      return;
    }
    case AE_IFREG:
      return addFile(path, e);
    case AE_IFLNK:
      return addSymlink(path, e);
    case AE_IFCHR:
      refuse("character devices are not allowed");
    case AE_IFBLK:
      refuse("block devices are not allowed");
    case AE_IFIFO:
      refuse("FIFOs are not allowed");
    case AE_IFSOCK:
      refuse("sockets are not allowed");
    default:
      refuse(fmt::format("unsupported entry type {:o}", type));
  }
}

bool Scanner::prepare(const std::string& path, bool isDir) {
  if (auto it = tree_.find(path); it != tree_.end()) {
    if (isDir && it->second.type == Entry::Type::Directory) return true;
    refuse("duplicate entry");
  }
  ensureDirectory(parentPath(path));
  return false;
}

void Scanner::ensureDirectory(std::string_view dir) {
  if (dir.empty()) return;
  if (auto it = tree_.find(std::string(dir)); it != tree_.end()) {
    if (it->second.type == Entry::Type::Directory) return;  // and so are its parents
    refuse(fmt::format("'{}' on its path is a {}", dir,
                       it->second.type == Entry::Type::Symlink ? "symlink" : "file"));
  }
  ensureDirectory(parentPath(dir));
  std::string path(dir);
  tree_[path] = directoryEntry(path, 0755);
  if (sink_) sink_->makeDirectory(path);
}

void Scanner::chargeBytes(uint64_t n) {
  bytes_ += n;
  if (bytes_ > limits_.maxBytes)
    refuse(fmt::format("unpacks to more than {} bytes", limits_.maxBytes));
}

void Scanner::addFile(const std::string& path, archive_entry* e) {
  prepare(path, false);
  const bool sizeKnown = archive_entry_size_is_set(e) && archive_entry_size(e) >= 0;
  const uint64_t declared = sizeKnown ? static_cast<uint64_t>(archive_entry_size(e)) : 0;
  // Refuse a bomb from its header before writing a byte; the stream is checked too.
  if (declared > limits_.maxBytes - std::min(bytes_, limits_.maxBytes))
    refuse(fmt::format("unpacks to more than {} bytes", limits_.maxBytes));

  if (sink_) sink_->openFile(path);
  Hasher h;
  static const char zeros[1 << 16] = {};
  auto hashZeros = [&](uint64_t n) {
    for (; n > 0; n -= std::min<uint64_t>(n, sizeof zeros))
      h.update(std::string_view(zeros, std::min<uint64_t>(n, sizeof zeros)));
  };
  uint64_t pos = 0;
  for (;;) {
    const void* buf = nullptr;
    size_t len = 0;
    la_int64_t off = 0;
    int r = archive_read_data_block(a_.get(), &buf, &len, &off);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) refuse(fmt::format("cannot read its data: {}", archiveError()));
    if (off < 0 || static_cast<uint64_t>(off) < pos) refuse("malformed data offsets");
    const uint64_t gap = static_cast<uint64_t>(off) - pos;  // a sparse file's hole
    chargeBytes(gap + len);
    hashZeros(gap);
    std::string_view data(static_cast<const char*>(buf), len);
    h.update(data);
    if (sink_ && len > 0) sink_->writeFile(static_cast<uint64_t>(off), data);
    pos = static_cast<uint64_t>(off) + len;
    report();
  }
  if (declared > pos) {  // a sparse file ending in a hole
    chargeBytes(declared - pos);
    hashZeros(declared - pos);
    pos = declared;
  }
  const mode_t mode = modeOf(e, 0777);  // no setuid, setgid or sticky
  std::optional<timespec> mtime;
  if (archive_entry_mtime_is_set(e))
    mtime = timespec{archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
  if (sink_) sink_->closeFile(mode, pos, mtime);
  Entry& entry = tree_[path];
  entry.path = path;
  entry.type = Entry::Type::File;
  entry.mode = mode;
  entry.size = pos;
  entry.content = h.finish();
}

void Scanner::addSymlink(const std::string& path, archive_entry* e) {
  const char* raw = utf8OrRaw(archive_entry_symlink_utf8(e), archive_entry_symlink(e));
  const std::string target = raw ? raw : "";
  if (target.empty()) refuse("symlink without a target");
  if (!isValidUtf8(target)) refuse("symlink target is not valid UTF-8");
  if (target.front() == '/') refuse(fmt::format("symlink to absolute path '{}'", target));
  prepare(path, false);
  if (!staysInside(path, target))  // checked again once the whole tree is known
    refuse(fmt::format("symlink target '{}' leaves the bundle", target));
  Entry& entry = tree_[path];
  entry.path = path;
  entry.type = Entry::Type::Symlink;
  entry.target = target;
  if (sink_) sink_->makeSymlink(path, target);
}

void Scanner::addHardLink(const std::string& path, const char* rawTarget, archive_entry* e) {
  auto norm = normaliseEntryName(rawTarget);
  if (auto* bad = std::get_if<BadName>(&norm))
    refuse(fmt::format("hard link to '{}': {}", rawTarget, bad->why));
  const std::string target = std::get<std::string>(norm);
  auto it = tree_.find(target);
  if (it == tree_.end())
    refuse(fmt::format("hard link to '{}', which is not earlier in the archive", rawTarget));
  if (it->second.type != Entry::Type::File)
    refuse(fmt::format("hard link to '{}', which is not a regular file", rawTarget));
  if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
    refuse("hard link carrying data of its own");
  prepare(path, false);
  Entry entry = it->second;  // the same inode: same content and mode
  entry.path = path;
  if (sink_) sink_->makeHardLink(path, target);
  tree_[path] = std::move(entry);
}

// Follows the link through the tree as the kernel would: links inside the tree
// are followed, what is missing is taken lexically. False when it would leave
// the root or loop.
bool Scanner::staysInside(const std::string& linkPath, const std::string& target) const {
  std::vector<std::string> dir;
  for (auto c : splitPath(parentPath(linkPath))) dir.emplace_back(c);
  std::deque<std::string> todo;
  for (auto c : splitPath(target)) todo.emplace_back(c);
  int hops = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      if (dir.empty()) return false;
      dir.pop_back();
      continue;
    }
    std::string here;
    for (const auto& d : dir) here += d + "/";
    here += c;
    auto it = tree_.find(here);
    if (it != tree_.end() && it->second.type == Entry::Type::Symlink) {
      const std::string& next = it->second.target;
      if (++hops > kMaxLinkHops || next.empty() || next.front() == '/') return false;
      auto parts = splitPath(next);
      for (auto p = parts.rbegin(); p != parts.rend(); ++p) todo.emplace_front(*p);
      continue;  // relative to the directory holding that link: `dir` stays
    }
    dir.push_back(std::move(c));
  }
  return true;
}

}  // namespace

Manifest scanArchive(const std::string& archivePath, const Limits& limits, Sink* sink,
                     const ByteProgress& progress, std::string_view what) {
  return Scanner(archivePath, limits, sink, progress, what).run();
}

}  // namespace mesh::bundle
