// Every path mesh-host keeps under --state-dir, named in one place
// (docs/state-store.md says what each holds).
#pragma once

#include <string>

#include "util/fs.hh"

namespace mesh::state {

struct StateDir {
  std::string path;  // the directory itself

  std::string store() const { return path + "/state.db"; }  // with -wal and -shm beside it
  std::string lock() const { return path + "/lock"; }
  std::string lastError() const { return path + "/last-error"; }
  std::string declarationError() const { return path + "/declaration-error"; }
  std::string blobs() const { return path + "/blobs"; }  // the default blob cache
  // Process bundles, unpacked one per digest (hex) under kBundles.
  static constexpr const char* kBundles = "bundles";
  std::string bundles() const { return path + "/" + kBundles; }
  std::string bundle(const std::string& hex) const { return bundles() + "/" + hex; }

  // Whether a store was ever created here (nothing applied yet otherwise).
  bool hasStore() const { return lstatPath(store()).has_value(); }
};

}  // namespace mesh::state
