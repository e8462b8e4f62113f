// Everything an applier needs from its surroundings, and the one gate between
// deciding and acting: in plan mode the gate is closed, so `plan` runs exactly the
// code `apply` runs, minus the writes.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fleet/blob_source.hh"
#include "fleet/node_key.hh"

namespace mesh::apply {

struct Settings {
  std::string root = "/";  // every declared absolute path lives under it
  std::string stateDir;
  std::string blobs;       // blob source spec
  std::string node;
  bool plan = false;
};

class Context {
 public:
  explicit Context(Settings s);

  bool applying() const { return !settings_.plan; }
  bool planning() const { return settings_.plan; }
  const Settings& settings() const { return settings_; }

  // The gate: runs `act` only when applying. Every write goes through here.
  template <typename F>
  void change(F&& act) {
    if (applying()) act();
  }

  // "/etc/x" → "<root>/etc/x".
  std::string hostPath(const std::string& declared) const;

  fleet::BlobSource& blobs();
  // The node key: loaded or created when applying; when planning on a node that
  // has none yet, an in-memory one (nothing is written by a plan).
  const fleet::NodeKey& nodeKey();

 private:
  Settings settings_;
  std::unique_ptr<fleet::BlobSource> blobs_;
  std::optional<fleet::NodeKey> key_;
};

}  // namespace mesh::apply
