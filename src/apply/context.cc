#include "apply/context.hh"

namespace mesh::apply {

Context::Context(Settings s) : settings_(std::move(s)) {
  while (settings_.root.size() > 1 && settings_.root.back() == '/') settings_.root.pop_back();
}

std::string Context::hostPath(const std::string& declared) const {
  if (settings_.root == "/") return declared;
  return settings_.root + declared;
}

fleet::BlobSource& Context::blobs() {
  if (!blobs_) blobs_ = fleet::openBlobSource(settings_.blobs);
  return *blobs_;
}

const fleet::NodeKey& Context::nodeKey() {
  if (!key_) {
    if (applying())
      key_ = fleet::NodeKey::loadOrCreate(settings_.stateDir);
    else if (auto k = fleet::NodeKey::load(settings_.stateDir))
      key_ = std::move(*k);
    else
      key_ = fleet::NodeKey::ephemeral();
  }
  return *key_;
}

}  // namespace mesh::apply
