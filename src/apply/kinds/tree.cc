#include "apply/kinds/tree.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

using json = nlohmann::json;

std::string TreeObserved::str() const {
  if (!manifest) return {};
  json fp = json::array();
  for (const auto& [path, f] : cache.fingerprints) fp.push_back({path, f});
  return json{{"manifest", manifest->str()}, {"fingerprints", fp}}.dump();
}

TreeObserved TreeObserved::parse(const std::string& text) {
  TreeObserved o;
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("manifest")) return o;
  try {
    o.manifest = bundle::Manifest::parse(j.at("manifest").get<std::string>());
    for (const auto& e : j.at("fingerprints"))
      o.cache.fingerprints.emplace_back(e.at(0).get<std::string>(), e.at(1).get<std::string>());
  } catch (const json::exception&) {
    return {};
  }
  return o;
}

std::optional<std::string> checkTree(Context& ctx, const std::string& hostDir, const Digest& bundle,
                                     const bundle::Limits& limits, const TreeObserved& prev,
                                     TreeObserved& now) {
  const auto st = lstatPath(hostDir);
  if (!st) return "missing";
  if (!S_ISDIR(st->st_mode)) return "not a directory";
  now = {};
  now.manifest = prev.manifest;
  const bundle::VerifyCache* trusted = &prev.cache;
  if (!now.manifest) {
    now.manifest = bundle::readManifest(ctx.blobs().fetch(bundle), limits);
    trusted = nullptr;
  }
  return bundle::verify(hostDir, *now.manifest, trusted, &now.cache);
}

namespace {

// Leftovers of an unpack that a crash interrupted: ".<name>.mesh-*" beside it.
void removeLeftovers(const std::string& host) {
  const std::string dir = parentOf(host);
  const std::string prefix = "." + baseName(host) + ".mesh-";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (auto* e = ::readdir(d))
    if (std::string_view(e->d_name).substr(0, prefix.size()) == prefix)
      stale.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const auto& p : stale) removeTree(p);
}

}  // namespace

bundle::Manifest unpackAndSwitch(const std::string& blob, const std::string& hostDir,
                                 const bundle::Limits& limits, bool replacing) {
  // Parents created here go again when the unpack fails: a refused bundle
  // leaves no trace outside its path.
  const auto createdParents = makeDirsTracked(parentOf(hostDir));
  removeLeftovers(hostDir);
  const std::string fresh = fmt::format("{}/.{}.mesh-new.{:08x}", parentOf(hostDir),
                                        baseName(hostDir), randombytes_random());
  bundle::Manifest manifest;
  try {
    manifest = bundle::unpack(blob, fresh, limits);
  } catch (...) {
    removeCreatedDirs(createdParents);
    throw;
  }
  if (replacing) {
    // Atomic swap of two directories: no moment without a complete tree in place.
    if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, hostDir.c_str(), RENAME_EXCHANGE) != 0) {
      int err = errno;
      removeTree(fresh);
      throw SysError(err, fmt::format("cannot switch {} to the new tree", hostDir));
    }
    syncDir(parentOf(hostDir));
    removeTree(fresh);  // now the old tree
  } else {
    if (::rename(fresh.c_str(), hostDir.c_str()) != 0) {
      int err = errno;
      removeTree(fresh);
      throw SysError(err, fmt::format("cannot move the new tree to {}", hostDir));
    }
    syncDir(parentOf(hostDir));
  }
  return manifest;
}

}  // namespace mesh::apply
