#include "apply/kinds/tree.hh"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "util/error.hh"
#include "util/faults.hh"
#include "util/fs.hh"

namespace mesh::apply {

std::optional<Fd> openTree(const Context::Place& at) {
  if (at.dir < 0) return std::nullopt;
  Fd tree(::openat(at.dir, at.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (tree) return tree;
  if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return std::nullopt;
  throwSys(fmt::format("cannot open {}", at.shown));
}

TreeCheck checkTree(Context& ctx, const Context::Place& at, const Digest& bundle,
                    const bundle::Limits& limits, TreeObserved prev) {
  const auto st = at.dir >= 0 ? statAt(at.dir, at.name, at.shown) : std::nullopt;
  if (!st) return {"missing", {}};
  if (!S_ISDIR(st->st_mode)) return {"not a directory", {}};
  const auto tree = openTree(at);
  if (!tree) return {"not a directory", {}};  // replaced since the look above
  TreeCheck out;
  out.now.manifest = std::move(prev.manifest);
  const bundle::VerifyCache* trusted = &prev.cache;
  if (!out.now.manifest) {
    out.now.manifest = bundle::readManifest(ctx.blobs().fetch(bundle), limits);
    trusted = nullptr;
  }
  auto verified = trusted ? bundle::verifyLean(tree->get(), *out.now.manifest, *trusted, at.shown)
                          : bundle::verify(tree->get(), *out.now.manifest, nullptr, at.shown);
  out.difference = std::move(verified.difference);
  out.sameAsPrev = verified.freshIsTrusted && !prev.legacy;
  out.now.cache = verified.freshIsTrusted ? std::move(prev.cache) : std::move(verified.fresh);
  return out;
}

namespace {

// Trees an unpack cut short left under the naming of earlier versions,
// ".<name>.mesh-new.<8 hex>": removed before the next unpack beside them, as
// those versions did. (Today's ".mesh-new.<hash>" is found by name.)
void removeLegacyLeftovers(const Context::Place& at) {
  const std::string prefix = "." + at.name + ".mesh-new.";
  if (prefix.size() + 8 > NAME_MAX) return;  // such a name cannot exist
  Fd fd(::openat(at.dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throwSys(fmt::format("cannot list the directory holding {}", at.shown));
  DIR* d = ::fdopendir(fd.get());
  if (!d) throwSys(fmt::format("cannot list the directory holding {}", at.shown));
  fd.release();
  Finally closeDir([&] { ::closedir(d); });
  std::vector<std::string> stale;
  while (auto* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n.size() == prefix.size() + 8 && n.substr(0, prefix.size()) == prefix &&
        n.find_first_not_of("0123456789abcdef", prefix.size()) == std::string_view::npos)
      stale.emplace_back(n);
  }
  for (const auto& name : stale) removeTreeAt(at.dir, name, at.shown + " (leftover)");
}

}  // namespace

bundle::Manifest unpackAndSwitch(Context& ctx, const std::string& blob, const Context::Place& at,
                                 const bundle::Limits& limits) {
  // Fixed length whatever the name's, and found again by name: a tree a kill cut
  // short is ours to remove (one writer per directory: the cycle, under the lock).
  const std::string fresh = tempNameFor(at.name, kUnpackTag);
  if (statAt(at.dir, fresh, at.shown)) removeTreeAt(at.dir, fresh, at.shown + " (leftover)");
  removeLegacyLeftovers(at);
  bundle::Manifest manifest =
      bundle::unpack(blob, at.dir, fresh, limits, at.shown, ctx.byteProgress);
  crashPoint(crash::kBeforeRename);
  auto discardFresh = [&](int err, std::string what) {
    try {
      removeTreeAt(at.dir, fresh, at.shown);
    } catch (const Error&) {  // the original error matters more
    }
    throw SysError(err, std::move(what));
  };
  if (statAt(at.dir, at.name, at.shown)) {
    // Atomic swap of two entries: no moment without a complete tree in place. The
    // last component is never followed: a link there is swapped out, not into.
    if (::renameat2(at.dir, fresh.c_str(), at.dir, at.name.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      discardFresh(err, fmt::format("cannot switch {} to the new tree", at.shown));
    }
    // Descriptors of directories inside the old tree now name the wrong ones; last,
    // for `at.dir` may be one the context holds.
    Finally forget([&] { ctx.forgetDirs(); });
    syncFd(at.dir, at.shown);
    crashPoint(crash::kAfterSwitch);                        // the old tree still beside the new one
    removeTreeAt(at.dir, fresh, at.shown + " (old tree)");  // now the old tree
  } else {
    // NOREPLACE: whatever appeared meanwhile is not silently replaced (plain
    // renameat where the file system takes no flags).
    int rc = ::renameat2(at.dir, fresh.c_str(), at.dir, at.name.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && errno == EINVAL) rc = ::renameat(at.dir, fresh.c_str(), at.dir, at.name.c_str());
    if (rc != 0) {
      const int err = errno;
      discardFresh(err, fmt::format("cannot move the new tree to {}", at.shown));
    }
    syncFd(at.dir, at.shown);
  }
  return manifest;
}

}  // namespace mesh::apply
