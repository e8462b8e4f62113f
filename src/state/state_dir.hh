// Every path mesh-host keeps under --state-dir, named in one place
// (docs/state-store.md says what each holds). The names themselves are in
// util/state_layout.hh, for the layers below state/ (trust/ loads the node key).
#pragma once

#include <string>

#include "util/fs.hh"
#include "util/state_layout.hh"

namespace mesh::state {

struct StateDir {
  std::string path;  // the directory itself

  std::string store() const { return at(layout::kStore); }  // with -wal and -shm beside it
  std::string lock() const { return at(layout::kLock); }    // the holder's pid (0640)
  std::string locks() const { return at(layout::kLocks); }  // the locks (0700)
  std::string lastError() const { return at(layout::kLastError); }
  std::string errorPage() const { return at(layout::kErrorPage); }
  std::string declarationError() const { return at(layout::kDeclarationError); }
  std::string cycleStopped() const { return at(layout::kCycleStopped); }
  std::string blobs() const { return at(layout::kBlobs); }  // the default blob cache
  std::string nodeKey() const { return at(layout::kNodeKey); }
  std::string trusted() const { return at(layout::kTrusted); }
  std::string agentLock() const { return at(layout::kAgentLock); }
  std::string agentPid() const { return at(layout::kAgentPid); }
  std::string driftWatch() const { return at(layout::kDriftWatch); }
  std::string healthChecks() const { return at(layout::kHealthChecks); }
  std::string paused() const { return at(layout::kPaused); }
  std::string pending() const { return at(layout::kPending); }
  // Process bundles, unpacked one per digest (hex) under layout::kBundles.
  std::string bundles() const { return at(layout::kBundles); }
  std::string bundle(const std::string& hex) const { return bundles() + "/" + hex; }

  // Whether a store was ever created here (nothing applied yet otherwise).
  bool hasStore() const { return lstatPath(store()).has_value(); }

 private:
  std::string at(std::string_view name) const { return layout::under(path, name); }
};

}  // namespace mesh::state
