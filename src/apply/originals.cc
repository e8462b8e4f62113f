#include "apply/originals.hh"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include "apply/kinds/attributes.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/state_layout.hh"

namespace mesh::apply {

namespace {

constexpr std::string_view kDir = layout::kOriginals;
constexpr std::string_view kIds = "ids";
constexpr std::string_view kHeader = "mesh-host original 1";

const char* typeName(Original::Type t) {
  switch (t) {
    case Original::Type::Nothing:
      return "nothing";
    case Original::Type::File:
      return "file";
    case Original::Type::Link:
      return "link";
    case Original::Type::Directory:
      return "directory";
    case Original::Type::Tree:
      return "tree";
    case Original::Type::TooLarge:
      return "too-large";
  }
  return "nothing";
}

std::optional<Original::Type> typeFromName(std::string_view s) {
  for (auto t : {Original::Type::Nothing, Original::Type::File, Original::Type::Link,
                 Original::Type::Directory, Original::Type::Tree, Original::Type::TooLarge})
    if (s == typeName(t)) return t;
  return std::nullopt;
}

std::string render(const Original& o) {
  return fmt::format(
      "{}\ntype {}\nmode {:o}\nuid {}\ngid {}\nsize {}\nbytes {}\non-remove {}\nkind {}\n{}",
      kHeader, typeName(o.type), o.mode & 07777, o.uid, o.gid, o.size,
      o.bytes.empty() ? "-" : o.bytes, decl::onRemoveName(o.onRemove), o.kind,
      o.path.empty() ? "" : "path " + o.path + "\n");
}

template <typename T>
bool number(std::string_view s, T& out, int base = 10) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::optional<Original> parse(std::string_view text) {
  Original o;
  size_t seen = 0;
  bool first = true;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (first) {
      if (line != kHeader) return std::nullopt;
      first = false;
      continue;
    }
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    const auto key = line.substr(0, sp), value = line.substr(sp + 1);
    bool ok = true;
    if (key == "type") {
      auto t = typeFromName(value);
      ok = t.has_value();
      if (t) o.type = *t;
    } else if (key == "mode") {
      ok = number(value, o.mode, 8);
    } else if (key == "uid") {
      ok = number(value, o.uid);
    } else if (key == "gid") {
      ok = number(value, o.gid);
    } else if (key == "size") {
      ok = number(value, o.size);
    } else if (key == "bytes") {
      if (value != "-") o.bytes = std::string(value);
    } else if (key == "on-remove") {
      ok = false;
      for (auto r : {decl::OnRemove::Restore, decl::OnRemove::Keep, decl::OnRemove::Delete})
        if (value == decl::onRemoveName(r)) o.onRemove = r, ok = true;
    } else if (key == "kind") {
      o.kind = std::string(value);
    } else if (key == "path") {
      o.path = std::string(value);
      continue;  // optional: not counted
    } else {
      continue;  // a later mesh-host's: ignored
    }
    if (!ok) return std::nullopt;
    ++seen;
  }
  if (seen < 8) return std::nullopt;
  return o;
}

}  // namespace

std::string Original::describe() const {
  const std::string attrs = fmt::format("mode {}, owner {}:{}", modeString(mode), uid, gid);
  switch (type) {
    case Type::Nothing:
      return "nothing";
    case Type::File:
      return fmt::format("a file of {} bytes, {}", size, attrs);
    case Type::Link:
      return fmt::format("a symbolic link, owner {}:{}", uid, gid);
    case Type::Directory:
      return fmt::format("a directory, {}", attrs);
    case Type::Tree:
      return fmt::format("a tree of {} bytes, {}", size, attrs);
    case Type::TooLarge:
      return fmt::format("a tree of {} bytes or more, too large to keep", size);
  }
  return "nothing";
}

int Originals::dir(bool create) {
  if (dir_) return dir_->get();
  Beneath& state = ctx_.stateDirBeneath();
  auto d = state.openDir(std::string(kDir) + "/" + std::string(kIds));
  if (!d && !create) return -1;
  if (!d) {
    // Made 0755 by Beneath, then narrowed: root-only (they hold what other
    // users' files held).
    std::vector<std::string> created;
    d = state.makeDirs(std::string(kDir) + "/" + std::string(kIds), &created);
    for (const auto& rel : {std::string(kDir), std::string(kDir) + "/" + std::string(kIds)})
      if (::fchmodat(state.fd(), rel.c_str(), 0700, 0) != 0)
        throwSys(fmt::format("cannot make {} root-only", state.shown(rel)));
  }
  dir_ = std::move(*d);
  return dir_->get();
}

const std::set<std::string>& Originals::ids() {
  if (ids_) return *ids_;
  ids_.emplace();
  const int d = dir(false);
  if (d < 0) return *ids_;
  Fd copy(::openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!copy) throwSys(fmt::format("cannot read {}/{}/{}", ctx_.settings().stateDir, kDir, kIds));
  DIR* listing = ::fdopendir(copy.release());
  if (!listing) throwSys("cannot list the kept originals");
  while (const dirent* e = ::readdir(listing)) {
    std::string_view name = e->d_name;
    if (name == "." || name == ".." || name.starts_with(".")) continue;
    ids_->insert(std::string(name));
  }
  ::closedir(listing);
  return *ids_;
}

std::optional<Original> Originals::find(const std::string& id) {
  if (!ids().count(id)) return std::nullopt;
  if (auto it = read_.find(id); it != read_.end()) return it->second;
  auto fd = openFileAt(dir(false), id, id);
  if (!fd) return std::nullopt;
  auto o = parse(readAll(fd->get(), id));
  if (!o)
    throw Error("the kept original of {} ({}/{}/{}/{}) is damaged; move it aside to go on", id,
                ctx_.settings().stateDir, kDir, kIds, id);
  read_.emplace(id, *o);
  return o;
}

void Originals::write(const std::string& id, const Original& o) {
  atomicWriteAt(dir(true), id, render(o), 0600, {}, id);
  if (ids_) ids_->insert(id);
  read_[id] = o;
}

void Originals::forget(const std::string& id) {
  const int d = dir(false);
  if (d < 0) return;
  if (::unlinkat(d, id.c_str(), 0) != 0 && errno != ENOENT)
    throwSys(fmt::format("cannot forget the kept original of {}", id));
  syncFd(d, id);
  if (ids_) ids_->erase(id);
  read_.erase(id);
}

std::string Originals::keepBytes(std::string_view bytes) {
  const Digest digest = Digest::ofBytes(bytes);
  dir(true);
  Beneath& state = ctx_.stateDirBeneath();
  auto top = state.openDir(kDir);
  if (!top) throw Error("{} vanished", state.shown(kDir));
  const std::string name = "sha256-" + digest.hex();
  if (!statAt(top->get(), name, name)) atomicWriteAt(top->get(), name, bytes, 0600, {}, name);
  return digest.str();
}

std::optional<std::string> Originals::readBytes(const std::string& digest) {
  auto d = Digest::parse(digest);
  if (!d) return std::nullopt;
  auto top = ctx_.stateDirBeneath().openDir(kDir);
  if (!top) return std::nullopt;
  auto fd = openFileAt(top->get(), "sha256-" + d->hex(), digest);
  if (!fd) return std::nullopt;
  std::string bytes = readAll(fd->get(), digest);
  if (Digest::ofBytes(bytes) != *d) return std::nullopt;
  return bytes;
}

Original Originals::keep(const decl::Resource& r, const Context::Place& place,
                         const struct stat& st, Depth depth) {
  if (auto had = find(r.id); had && had->type != Original::Type::Nothing && had->keptFrom(r.path()))
    return *had;
  Original o;
  o.onRemove = r.onRemove;
  o.kind = decl::kindName(r.kind);
  o.path = r.path();
  o.mode = st.st_mode & 07777;
  o.uid = st.st_uid;
  o.gid = st.st_gid;
  if (S_ISREG(st.st_mode)) {
    auto fd = openFileAt(place.dir, place.name, place.shown);
    if (!fd) throw Error("{} changed while mesh-host was keeping it", place.shown);
    const std::string bytes = readAll(fd->get(), place.shown);
    o.type = Original::Type::File;
    o.size = bytes.size();
    o.bytes = keepBytes(bytes);
  } else if (S_ISLNK(st.st_mode)) {
    auto target = readLinkAt(place.dir, place.name, place.shown);
    if (!target) throw Error("{} changed while mesh-host was keeping it", place.shown);
    o.type = Original::Type::Link;
    o.size = target->size();
    o.bytes = keepBytes(*target);
  } else if (S_ISDIR(st.st_mode) && depth == Depth::Attributes) {
    o.type = Original::Type::Directory;
  } else if (S_ISDIR(st.st_mode)) {
    Fd d(::openat(place.dir, place.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!d) throwSys(fmt::format("cannot open {}", place.shown));
    auto tree = keepTree(d.get(), place.shown, [&](std::string_view b) { return keepBytes(b); });
    if (!tree) {
      o.type = Original::Type::TooLarge;
      o.size = kTreeKeepBytes;
    } else if (tree->manifest.empty()) {
      o.type = Original::Type::Directory;
    } else {
      o.type = Original::Type::Tree;
      o.size = tree->bytes;
      o.bytes = keepBytes(tree->manifest);
    }
  } else {
    throw Error("{} is a special file; mesh-host keeps only files, links and directories",
                place.shown);
  }
  write(r.id, o);
  return o;
}

void Originals::noteOnRemove(const decl::Resource& r) {
  if (!ctx_.applying()) return;
  if (!ids().count(r.id)) {
    if (r.onRemove == decl::OnRemove::Restore) return;
    Original o;
    o.onRemove = r.onRemove;
    o.kind = decl::kindName(r.kind);
    write(r.id, o);
    return;
  }
  auto o = find(r.id);
  if (!o || o->onRemove == r.onRemove) return;
  o->onRemove = r.onRemove;
  write(r.id, *o);
}

// A tree is made whole beside the path (".mesh-restore.<name>", made again
// from the start after a crash) and renamed into place, so the path never holds
// half of it. What stands at the path goes first when it is an archive's tree
// (the pruner checked it is the one mesh-host wrote); anything made there since
// an `absent` removed the tree is left, and the tree not put back.
void Originals::giveBackTree(const Context::Place& place, const std::optional<struct stat>& st,
                             const std::string& path, const Original& o,
                             const std::string& manifest) {
  if (st && o.kind != "archive")
    throw Error(
        "{} holds something made since mesh-host removed what was there; move it "
        "away to have mesh-host put back what it removed",
        path);
  const std::string temp = ".mesh-restore." + place.name;
  if (statAt(place.dir, temp, path)) removeTreeAt(place.dir, temp, path);
  restoreTree(place.dir, temp, path, manifest, [&](const std::string& d) { return readBytes(d); });
  Fd d(::openat(place.dir, temp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) throwSys(fmt::format("cannot open {}", path));
  if (::fchown(d.get(), o.uid, o.gid) != 0 || ::fchmod(d.get(), o.mode) != 0)
    throwSys(fmt::format("cannot give {} back its mode and owner", path));
  syncFd(d.get(), path);
  if (st && S_ISDIR(st->st_mode))
    removeTreeAt(place.dir, place.name, path);
  else if (st && ::unlinkat(place.dir, place.name.c_str(), 0) != 0 && errno != ENOENT)
    throwSys(fmt::format("cannot remove {}", path));
  if (::renameat(place.dir, temp.c_str(), place.dir, place.name.c_str()) != 0)
    throwSys(fmt::format("cannot put {} back", path));
  syncFd(place.dir, path);
  ctx_.forgetDirs();  // `place.dir`'s entries changed under the context
}

Removal Originals::giveBack(Step& step, const std::string& path, const Original& o) {
  Context& ctx = step.ctx();
  const std::string what = o.describe();
  std::optional<std::string> bytes;
  if (!o.bytes.empty()) {
    bytes = readBytes(o.bytes);
    if (!bytes)
      throw Error(
          "the kept original of {} ({}) is missing or damaged under {}/{}; nothing put back", path,
          o.bytes, ctx.settings().stateDir, kDir);
  }
  step.change([&] {
    std::vector<std::string> created;
    const auto place = ctx.makePlace(path, &created);
    const auto st = ctx.look(place);
    const Ownership ids{o.uid, o.gid};
    switch (o.type) {
      case Original::Type::File:
        atomicWriteAt(place.dir, place.name, *bytes, o.mode, ids, path);
        break;
      case Original::Type::Link:
        atomicSymlinkAt(place.dir, place.name, *bytes, path);
        if (::fchownat(place.dir, place.name.c_str(), o.uid, o.gid, AT_SYMLINK_NOFOLLOW) != 0)
          throwSys(fmt::format("cannot give {} back its owner", path));
        syncFd(place.dir, path);
        break;
      case Original::Type::Tree:
        giveBackTree(place, st, path, o, *bytes);
        break;
      case Original::Type::Directory: {
        if (st && !S_ISDIR(st->st_mode)) {
          if (::unlinkat(place.dir, place.name.c_str(), 0) != 0)
            throwSys(fmt::format("cannot remove {}", path));
        }
        if (!st || !S_ISDIR(st->st_mode)) {
          if (::mkdirat(place.dir, place.name.c_str(), 0700) != 0 && errno != EEXIST)
            throwSys(fmt::format("cannot make {}", path));
        }
        Fd d(::openat(place.dir, place.name.c_str(),
                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!d) throwSys(fmt::format("cannot open {}", path));
        if (::fchown(d.get(), o.uid, o.gid) != 0 || ::fchmod(d.get(), o.mode) != 0)
          throwSys(fmt::format("cannot give {} back its mode and owner", path));
        syncFd(d.get(), path);
        syncFd(place.dir, path);
        break;
      }
      case Original::Type::Nothing:
      case Original::Type::TooLarge:
        break;
    }
  });
  return Removal::restored(ctx.planning(), what);
}

bool Originals::holds(const std::string& path, const Original& o) {
  if (!o.restorable()) return false;
  const auto place = ctx_.place(path);
  const auto st = ctx_.look(place);
  if (!st || st->st_uid != o.uid || st->st_gid != o.gid) return false;
  const bool sameMode = (st->st_mode & 07777) == o.mode;
  switch (o.type) {
    case Original::Type::File: {
      if (!S_ISREG(st->st_mode) || !sameMode || static_cast<uint64_t>(st->st_size) != o.size)
        return false;
      auto fd = openFileAt(place.dir, place.name, path);
      return fd && Digest::ofBytes(readAll(fd->get(), path)).str() == o.bytes;
    }
    case Original::Type::Link: {
      if (!S_ISLNK(st->st_mode)) return false;
      auto target = readLinkAt(place.dir, place.name, path);
      return target && Digest::ofBytes(*target).str() == o.bytes;
    }
    case Original::Type::Directory:
      return S_ISDIR(st->st_mode) && sameMode;
    case Original::Type::Tree: {
      if (!S_ISDIR(st->st_mode) || !sameMode) return false;
      Fd d(
          ::openat(place.dir, place.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!d) return false;
      // The manifest of what is there, its bytes digested, not kept.
      auto now =
          keepTree(d.get(), path, [](std::string_view b) { return Digest::ofBytes(b).str(); });
      return now && Digest::ofBytes(now->manifest).str() == o.bytes;
    }
    case Original::Type::Nothing:
    case Original::Type::TooLarge:
      break;
  }
  return false;
}

std::optional<Original> readOriginal(const std::string& stateDir, const std::string& id) {
  if (id.empty() || id.find('/') != std::string::npos || id.starts_with(".")) return std::nullopt;
  auto text = readFile(stateDir + "/" + std::string(kDir) + "/" + std::string(kIds) + "/" + id);
  return text ? parse(*text) : std::nullopt;
}

std::vector<std::string> originalsUnneeded(const std::string& stateDir,
                                           const std::function<bool(const std::string&)>& needed) {
  const std::string top = stateDir + "/" + std::string(kDir);
  const std::string idsDir = top + "/" + std::string(kIds);
  std::vector<std::string> out;
  std::set<std::string> used;  // "sha256-<hex>"
  auto use = [&](const std::string& digest) {
    if (auto d = Digest::parse(digest)) used.insert("sha256-" + d->hex());
  };
  bool damaged = false;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(idsDir, ec)) {
    const std::string id = e.path().filename().string();
    if (id.starts_with(".")) continue;
    if (!needed(id)) {
      out.push_back(e.path().string());
      continue;
    }
    auto text = readFile(e.path().string());
    auto o = text ? parse(*text) : std::nullopt;
    if (!o) {  // damaged: its bytes may be needed, so none is dropped below
      damaged = true;
      continue;
    }
    use(o->bytes);
    const auto d = Digest::parse(o->bytes);
    if (o->type != Original::Type::Tree || !d) continue;
    auto manifest = readFile(top + "/sha256-" + d->hex());
    if (!manifest) continue;
    for (size_t at = 0; at < manifest->size();) {
      size_t nl = manifest->find('\n', at);
      if (nl == std::string::npos) nl = manifest->size();
      char type = 0;
      unsigned mode = 0, uid = 0, gid = 0;
      char digest[80] = {0};
      if (std::sscanf(manifest->substr(at, nl - at).c_str(), "%c %o %u %u %79s", &type, &mode, &uid,
                      &gid, digest) == 5)
        use(digest);
      at = nl + 1;
    }
  }
  for (const auto& e : std::filesystem::directory_iterator(top, ec)) {
    if (damaged) break;
    const std::string name = e.path().filename().string();
    if (name.starts_with("sha256-") && !used.count(name)) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mesh::apply
