// verify(): is the tree on disk still exactly what unpack() made? Walks it
// without following links; hashes only files whose stat fingerprint is not
// trusted, so a no-op cycle over a large bundle costs little more than the stats.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bundle/unpack.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::bundle {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

const char* typeName(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  return "special file";
}

bool sameType(Entry::Type t, mode_t mode) {
  switch (t) {
    case Entry::Type::File:
      return S_ISREG(mode);
    case Entry::Type::Directory:
      return S_ISDIR(mode);
    case Entry::Type::Symlink:
      return S_ISLNK(mode);
  }
  return false;
}

using Reason = std::optional<std::string>;

class Verifier {
 public:
  Verifier(const std::string& root, const Manifest& m, const VerifyCache* trusted,
           VerifyCache* fresh)
      : root_(root), m_(m), trusted_(trusted), fresh_(fresh), seen_(m.entries.size(), false) {}

  Reason run() {
    Fd dir(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) {
      if (errno == ENOENT) return fmt::format("missing: {}", root_);
      throwSys(fmt::format("cannot open {}", root_));
    }
    if (auto r = walk(std::move(dir), "")) return r;
    for (size_t i = 0; i < seen_.size(); ++i)
      if (!seen_[i]) return fmt::format("missing: {}", m_.entries[i].path);
    return std::nullopt;
  }

 private:
  Reason walk(Fd fd, const std::string& prefix) {
    DIR* d = ::fdopendir(fd.get());
    if (!d) throwSys(fmt::format("cannot list {}/{}", root_, prefix));
    fd.release();
    Finally closeDir([&] { ::closedir(d); });
    std::vector<std::string> names;
    errno = 0;
    while (auto* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    if (errno != 0) throwSys(fmt::format("cannot list {}/{}", root_, prefix));
    std::sort(names.begin(), names.end());  // the same first difference every time
    for (const auto& name : names)
      if (auto r = check(::dirfd(d), name, prefix + name)) return r;
    return std::nullopt;
  }

  Reason check(int dirfd, const std::string& name, const std::string& path) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return std::nullopt;  // gone meanwhile: reported as missing
      throwSys(fmt::format("cannot inspect {}/{}", root_, path));
    }
    auto it = std::lower_bound(m_.entries.begin(), m_.entries.end(), path,
                               [](const Entry& e, const std::string& p) { return e.path < p; });
    if (it == m_.entries.end() || it->path != path) return fmt::format("unexpected: {}", path);
    const Entry& want = *it;
    seen_[static_cast<size_t>(it - m_.entries.begin())] = true;
    if (!sameType(want.type, st.st_mode))
      return fmt::format("changed: {} is now a {}", path, typeName(st.st_mode));
    if (want.type != Entry::Type::Symlink && (st.st_mode & 07777) != want.mode)
      return fmt::format("mode of {} is {:04o}, want {:04o}", path, st.st_mode & 07777, want.mode);
    switch (want.type) {
      case Entry::Type::Directory: {
        Fd sub(::openat(dirfd, name.c_str(), kDirFlags));
        if (!sub) {
          if (errno == ENOENT) return fmt::format("missing: {}", path);
          throwSys(fmt::format("cannot open {}/{}", root_, path));
        }
        return walk(std::move(sub), path + "/");
      }
      case Entry::Type::Symlink:
        return checkLink(dirfd, name, path, want);
      case Entry::Type::File:
        return checkFile(dirfd, name, path, want, st);
    }
    return std::nullopt;
  }

  Reason checkLink(int dirfd, const std::string& name, const std::string& path, const Entry& want) {
    std::string target(want.target.size() + 1, '\0');  // one more to see a longer target
    ssize_t n = ::readlinkat(dirfd, name.c_str(), target.data(), target.size());
    if (n < 0) {
      if (errno == ENOENT) return fmt::format("missing: {}", path);
      throwSys(fmt::format("cannot read link {}/{}", root_, path));
    }
    if (static_cast<size_t>(n) > want.target.size()) {
      target.resize(4096);
      n = ::readlinkat(dirfd, name.c_str(), target.data(), target.size());
      if (n < 0) throwSys(fmt::format("cannot read link {}/{}", root_, path));
    }
    target.resize(static_cast<size_t>(n));
    if (target != want.target)
      return fmt::format("link {} points to {}, want {}", path, target, want.target);
    return std::nullopt;
  }

  Reason checkFile(int dirfd, const std::string& name, const std::string& path, const Entry& want,
                   const struct stat& st) {
    if (static_cast<uint64_t>(st.st_size) != want.size) return fmt::format("changed: {}", path);
    const std::string fingerprint = Fingerprint::of(st).str();
    if (!isTrusted(path, fingerprint)) {
      auto digest = hash(dirfd, name, path, st);
      if (!digest || *digest != want.content) return fmt::format("changed: {}", path);
    }
    if (fresh_ && !fingerprintIsRacy(st)) fresh_->fingerprints.emplace_back(path, fingerprint);
    return std::nullopt;
  }

  bool isTrusted(const std::string& path, const std::string& fingerprint) const {
    if (!trusted_) return false;
    const auto& fps = trusted_->fingerprints;
    auto it = std::lower_bound(fps.begin(), fps.end(), path,
                               [](const auto& kv, const std::string& p) { return kv.first < p; });
    return it != fps.end() && it->first == path && it->second == fingerprint;
  }

  // The content's digest; nullopt when what is there now is not the file that was stat'ed.
  std::optional<Digest> hash(int dirfd, const std::string& name, const std::string& path,
                             const struct stat& st) const {
    Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT || errno == ELOOP) return std::nullopt;
      throwSys(fmt::format("cannot read {}/{}", root_, path));
    }
    struct stat now {};
    if (::fstat(fd.get(), &now) != 0) throwSys(fmt::format("cannot inspect {}/{}", root_, path));
    if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
      return std::nullopt;
    Hasher h;
    readChunks(fd.get(), root_ + "/" + path, [&](std::string_view chunk) { h.update(chunk); });
    return h.finish();
  }

  const std::string& root_;
  const Manifest& m_;
  const VerifyCache* trusted_;
  VerifyCache* fresh_;
  std::vector<bool> seen_;
};

}  // namespace

std::optional<std::string> verify(const std::string& dir, const Manifest& m,
                                  const VerifyCache* trusted, VerifyCache* fresh) {
  if (fresh) fresh->fingerprints.clear();
  auto reason = Verifier(dir, m, trusted, fresh).run();
  if (fresh) {
    if (reason)
      fresh->fingerprints.clear();  // only a tree that verified may vouch for its files
    else
      std::sort(fresh->fingerprints.begin(), fresh->fingerprints.end());
  }
  return reason;
}

}  // namespace mesh::bundle
