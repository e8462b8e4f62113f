// verify(): is the tree on disk still exactly what unpack() made? Walks it from
// the caller's descriptor without following links; hashes only files whose stat
// fingerprint is not trusted, so a no-op cycle over a large bundle costs little
// more than the stats. unlisted(): what the tree holds beyond a manifest.
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

// A descriptor of its own for the tree open at `tree`: a new open file
// description, so listing it moves no offset the caller's descriptor shares.
Fd reopen(int tree, const std::string& shown) {
  Fd fd(::openat(tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throwSys(fmt::format("cannot open {}", shown));
  return fd;
}

// The names in the directory `d`, sorted: the same first difference every time.
std::vector<std::string> listSorted(DIR* d, const std::string& shown) {
  std::vector<std::string> names;
  errno = 0;
  while (auto* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  if (errno != 0) throwSys(fmt::format("cannot list {}", shown));
  std::sort(names.begin(), names.end());
  return names;
}

DIR* openList(Fd& fd, const std::string& shown) {
  DIR* d = ::fdopendir(fd.get());
  if (!d) throwSys(fmt::format("cannot list {}", shown));
  fd.release();
  return d;
}

const Entry* lookup(const Manifest& m, const std::string& path) {
  auto it = std::lower_bound(m.entries.begin(), m.entries.end(), path,
                             [](const Entry& e, const std::string& p) { return e.path < p; });
  return it == m.entries.end() || it->path != path ? nullptr : &*it;
}

// The walk meets files in directory order, not path order ("a/b" before "a-c").
void sortByEntry(VerifyCache& c) {
  std::sort(c.fingerprints.begin(), c.fingerprints.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
}

class Verifier {
 public:
  // `lean`: a file whose fingerprint is the trusted one is marked, not copied into
  // `fresh`; finish() says whether `fresh` is `trusted` exactly, or completes it.
  Verifier(const std::string& shown, const Manifest& m, const VerifyCache* trusted,
           VerifyCache* fresh, bool lean = false)
      : root_(shown),
        m_(m),
        trusted_(trusted),
        fresh_(fresh),
        seen_(m.entries.size(), false),
        lean_(lean && trusted),
        kept_(lean_ ? trusted->fingerprints.size() : 0, false) {}

  // Lean only: true when every trusted fingerprint was seen again and no other was
  // taken (then `fresh` stays empty); else `fresh` gets the kept trusted ones too.
  bool finish() {
    if (!lean_) return false;
    if (fresh_->fingerprints.empty() && keptCount_ == kept_.size()) return true;
    for (size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i]) fresh_->fingerprints.push_back(trusted_->fingerprints[i]);
    return false;
  }

  Reason run(int tree) {
    if (auto r = walk(reopen(tree, root_), "")) return r;
    for (size_t i = 0; i < seen_.size(); ++i)
      if (!seen_[i]) return fmt::format("missing: {}", m_.entries[i].path);
    return std::nullopt;
  }

 private:
  Reason walk(Fd fd, const std::string& prefix) {
    DIR* d = openList(fd, root_ + "/" + prefix);
    Finally closeDir([&] { ::closedir(d); });
    for (const auto& name : listSorted(d, root_ + "/" + prefix))
      if (auto r = check(::dirfd(d), name, prefix + name)) return r;
    return std::nullopt;
  }

  Reason check(int dirfd, const std::string& name, const std::string& path) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return std::nullopt;  // gone meanwhile: reported as missing
      throwSys(fmt::format("cannot inspect {}/{}", root_, path));
    }
    const Entry* found = lookup(m_, path);
    if (!found) return fmt::format("unexpected: {}", path);
    const Entry& want = *found;
    seen_[static_cast<size_t>(found - m_.entries.data())] = true;
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
    const auto index = static_cast<uint32_t>(&want - m_.entries.data());
    const Fingerprint fingerprint = Fingerprint::of(st);
    const auto trusted = trustedAt(index, fingerprint);
    if (!trusted) {
      auto digest = hash(dirfd, name, path, st);
      if (!digest || *digest != want.content) return fmt::format("changed: {}", path);
    }
    if (fresh_ && !fingerprintIsRacy(st)) {
      if (lean_ && trusted) {
        kept_[*trusted] = true;
        ++keptCount_;
      } else {
        fresh_->fingerprints.emplace_back(index, fingerprint);
      }
    }
    return std::nullopt;
  }

  // Where entry `index`'s trusted fingerprint is in the trusted ones, when it is
  // `fingerprint`.
  std::optional<size_t> trustedAt(uint32_t index, const Fingerprint& fingerprint) const {
    if (!trusted_) return std::nullopt;
    const auto& fps = trusted_->fingerprints;
    auto it = std::lower_bound(fps.begin(), fps.end(), index,
                               [](const auto& kv, uint32_t i) { return kv.first < i; });
    if (it == fps.end() || it->first != index || it->second != fingerprint) return std::nullopt;
    return static_cast<size_t>(it - fps.begin());
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

  const std::string root_;
  const Manifest& m_;
  const VerifyCache* trusted_;
  VerifyCache* fresh_;
  std::vector<bool> seen_;
  const bool lean_;
  std::vector<bool> kept_;  // lean: trusted fingerprints seen again, by index
  size_t keptCount_ = 0;
};

class Lister {
 public:
  Lister(const std::string& shown, const Manifest& m, size_t keep)
      : root_(shown), m_(m), keep_(keep) {}

  Unlisted run(int tree) {
    walk(reopen(tree, root_), "");
    return std::move(out_);
  }

 private:
  // True when the directory holds anything at all.
  bool walk(Fd fd, const std::string& prefix) {
    DIR* d = openList(fd, root_ + "/" + prefix);
    Finally closeDir([&] { ::closedir(d); });
    const auto names = listSorted(d, root_ + "/" + prefix);
    for (const auto& name : names) {
      const std::string path = prefix + name;
      struct stat st {};
      if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // gone meanwhile
        throwSys(fmt::format("cannot inspect {}/{}", root_, path));
      }
      const bool named = lookup(m_, path) != nullptr;
      if (S_ISDIR(st.st_mode)) {
        Fd sub(::openat(::dirfd(d), name.c_str(), kDirFlags));
        if (!sub) {
          if (errno == ENOENT) continue;
          if (errno != ELOOP && errno != ENOTDIR)
            throwSys(fmt::format("cannot open {}/{}", root_, path));
          if (!named) add(path);  // swapped for a link meanwhile: it is what goes
          continue;
        }
        // An unnamed directory counts itself only when nothing in it counts.
        if (!walk(std::move(sub), path + "/") && !named) add(path + "/");
      } else if (!named) {
        add(path);
      }
    }
    return !names.empty();
  }

  void add(std::string path) {
    ++out_.count;
    if (out_.first.size() < keep_) out_.first.push_back(std::move(path));
  }

  const std::string root_;
  const Manifest& m_;
  size_t keep_;
  Unlisted out_;
};

}  // namespace

Verified verify(int tree, const Manifest& m, const VerifyCache* trusted, const std::string& shown) {
  Verified out;
  out.difference = Verifier(shown.empty() ? "." : shown, m, trusted, &out.fresh).run(tree);
  if (out.difference)
    out.fresh.fingerprints.clear();  // only a tree that verified may vouch for its files
  else
    sortByEntry(out.fresh);
  return out;
}

Verified verifyLean(int tree, const Manifest& m, const VerifyCache& trusted,
                    const std::string& shown) {
  Verified out;
  Verifier v(shown.empty() ? "." : shown, m, &trusted, &out.fresh, /*lean=*/true);
  out.difference = v.run(tree);
  if (out.difference) {
    out.fresh.fingerprints.clear();
    return out;
  }
  out.freshIsTrusted = v.finish();
  sortByEntry(out.fresh);
  return out;
}

Unlisted unlisted(int tree, const Manifest& m, size_t keep, const std::string& shown) {
  return Lister(shown.empty() ? "." : shown, m, keep).run(tree);
}

}  // namespace mesh::bundle
