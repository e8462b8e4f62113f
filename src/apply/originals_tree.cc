// A tree kept by apply/originals.hh: its manifest, one line per entry beneath
// the top, parents before what they hold —
//   <d|f|l> <mode, octal> <uid> <gid> <digest of the bytes kept, or -> <path, hex>
// — a file's content and a link's target kept as bytes. The walk never follows a
// link (O_NOFOLLOW at every open) and skips what is neither file, link nor
// directory (a socket, a FIFO: nothing to keep of them).
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "apply/originals.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

std::vector<std::string> entriesOf(int dirFd, const std::string& shown) {
  Fd copy(::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!copy) throwSys(fmt::format("cannot read {}", shown));
  DIR* listing = ::fdopendir(copy.release());
  if (!listing) throwSys(fmt::format("cannot read {}", shown));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(listing)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  ::closedir(listing);
  std::sort(names.begin(), names.end());
  return names;
}

std::string hexOf(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::optional<std::string> unhex(std::string_view s) {
  if (s.size() % 2) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < s.size(); i += 2) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data() + i, s.data() + i + 2, v, 16);
    if (ec != std::errc() || p != s.data() + i + 2) return std::nullopt;
    out += static_cast<char>(v);
  }
  return out;
}

Fd openDirAt(int dir, const std::string& name, const std::string& shown) {
  Fd d(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) throwSys(fmt::format("cannot open {}", shown));
  return d;
}

// `rel` beneath `top`, one component at a time, never following a link.
Fd openRel(int top, std::string_view rel, const std::string& shown) {
  Fd where(::dup(top));
  if (!where) throwSys("cannot open " + shown);
  while (!rel.empty()) {
    const size_t s = rel.find('/');
    where = openDirAt(where.get(), std::string(rel.substr(0, s)), shown);
    rel = s == std::string_view::npos ? std::string_view() : rel.substr(s + 1);
  }
  return where;
}

// Walks the tree: measuring (keep unset) or keeping.
struct Walk {
  const std::function<std::string(std::string_view)>* keep = nullptr;
  uint64_t bytes = 0, entries = 0;
  std::string manifest;

  bool over() const { return bytes > kTreeKeepBytes || entries > kTreeKeepEntries; }

  void line(char type, const struct stat& st, const std::string& digest, const std::string& rel) {
    manifest += fmt::format("{} {:o} {} {} {} {}\n", type, st.st_mode & 07777, st.st_uid, st.st_gid,
                            digest.empty() ? "-" : digest, hexOf(rel));
  }

  void dir(int fd, const std::string& rel, const std::string& shown) {
    for (const auto& name : entriesOf(fd, shown)) {
      if (over()) return;
      const std::string r = rel.empty() ? name : rel + "/" + name;
      const std::string s = shown + "/" + name;
      struct stat st {};
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throwSys("cannot stat " + s);
      ++entries;
      if (S_ISDIR(st.st_mode)) {
        if (keep) line('d', st, "", r);
        Fd sub = openDirAt(fd, name, s);
        dir(sub.get(), r, s);
      } else if (S_ISREG(st.st_mode)) {
        bytes += static_cast<uint64_t>(st.st_size);
        if (!keep || over()) continue;
        auto f = openFileAt(fd, name, s);
        if (!f) throw Error("{} changed while mesh-host was keeping it", s);
        line('f', st, (*keep)(readAll(f->get(), s)), r);
      } else if (S_ISLNK(st.st_mode)) {
        if (!keep) continue;
        auto target = readLinkAt(fd, name, s);
        if (!target) throw Error("{} changed while mesh-host was keeping it", s);
        line('l', st, (*keep)(*target), r);
      }
    }
  }
};

}  // namespace

std::optional<TreeKeep> keepTree(int dirFd, const std::string& shown,
                                 const std::function<std::string(std::string_view)>& keepBytes) {
  Walk measure;
  measure.dir(dirFd, "", shown);
  if (measure.over()) return std::nullopt;
  Walk keeping;
  keeping.keep = &keepBytes;
  keeping.dir(dirFd, "", shown);
  return TreeKeep{std::move(keeping.manifest), keeping.bytes};
}

bool treeWithinKeepBound(int dirFd, const std::string& shown) {
  Walk measure;
  measure.dir(dirFd, "", shown);
  return !measure.over();
}

void restoreTree(int parent, const std::string& name, const std::string& shown,
                 const std::string& manifest,
                 const std::function<std::optional<std::string>(const std::string&)>& readBytes) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST)
    throwSys(fmt::format("cannot make {}", shown));
  Fd top = openDirAt(parent, name, shown);
  struct DirAttrs {
    std::string rel;
    mode_t mode;
    uid_t uid;
    gid_t gid;
  };
  std::vector<DirAttrs> dirs;  // set last, deepest first: a 0500 one still takes entries
  size_t at = 0;
  while (at < manifest.size()) {
    const size_t nl = manifest.find('\n', at);
    if (nl == std::string::npos) break;
    const std::string line = manifest.substr(at, nl - at);
    at = nl + 1;
    char type = 0;
    unsigned mode = 0, uid = 0, gid = 0;
    char digest[80] = {0}, hexPath[8200] = {0};
    if (line.size() >= sizeof hexPath || std::sscanf(line.c_str(), "%c %o %u %u %79s %8199s", &type,
                                                     &mode, &uid, &gid, digest, hexPath) != 6)
      throw Error("the kept tree of {} has a damaged line", shown);
    const auto rel = unhex(hexPath);
    if (!rel || rel->empty() || rel->front() == '/' || rel->find("..") != std::string::npos)
      throw Error("the kept tree of {} has a damaged path", shown);
    const size_t slash = rel->rfind('/');
    const std::string leaf = slash == std::string::npos ? *rel : rel->substr(slash + 1);
    const Fd where =
        openRel(top.get(), slash == std::string::npos ? std::string_view() : rel->substr(0, slash),
                shown + "/" + *rel);
    const std::string s = shown + "/" + *rel;
    if (type == 'd') {
      if (::mkdirat(where.get(), leaf.c_str(), 0700) != 0 && errno != EEXIST)
        throwSys("cannot make " + s);
      dirs.push_back({*rel, static_cast<mode_t>(mode), uid, gid});
      continue;
    }
    auto bytes = readBytes(digest);
    if (!bytes) throw Error("the kept bytes of {} ({}) are missing or damaged", s, digest);
    if (type == 'f') {
      atomicWriteAt(where.get(), leaf, *bytes, static_cast<mode_t>(mode), {uid, gid}, s);
    } else if (type == 'l') {
      atomicSymlinkAt(where.get(), leaf, *bytes, s);
      if (::fchownat(where.get(), leaf.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
        throwSys("cannot give " + s + " back its owner");
    }
  }
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    const Fd d = openRel(top.get(), it->rel, shown + "/" + it->rel);
    if (::fchown(d.get(), it->uid, it->gid) != 0 || ::fchmod(d.get(), it->mode) != 0)
      throwSys(fmt::format("cannot give {}/{} back its mode and owner", shown, it->rel));
    syncFd(d.get(), shown);
  }
  syncFd(top.get(), shown);
}

}  // namespace mesh::apply
