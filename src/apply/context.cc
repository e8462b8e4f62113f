#include "apply/context.hh"

#include <fcntl.h>
#include <unistd.h>

#include "util/error.hh"

namespace mesh::apply {

Context::Context(Settings s) : settings_(std::move(s)) {
  while (settings_.root.size() > 1 && settings_.root.back() == '/') settings_.root.pop_back();
}

Context::~Context() {
  if (rootFd_ >= 0) ::close(rootFd_);
}

std::optional<struct stat> Context::lstatDeclared(const std::string& declared) {
  if (rootFd_ < 0) {
    rootFd_ = ::open(settings_.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootFd_ < 0) throwSys(fmt::format("cannot open --root {}", settings_.root));
  }
  struct stat st {};
  // Declared paths are absolute and normalised: skip the leading '/'.
  if (::fstatat(rootFd_, declared.c_str() + 1, &st, AT_SYMLINK_NOFOLLOW) == 0) return st;
  if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
  throwSys(fmt::format("cannot inspect {}", declared));
}

std::string Context::hostPath(const std::string& declared) const {
  if (settings_.root == "/") return declared;
  return settings_.root + declared;
}

fleet::BlobSource& Context::blobs() {
  if (!blobs_) blobs_ = fleet::openBlobSource(settings_.blobs, settings_.stateDir + "/blobs");
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

supervise::Supervisor& Context::supervisor() {
  if (!supervisor_) {
    supervise::Options o;
    o.stateDir = settings_.stateDir;
    o.unitDir = settings_.unitDir;
    supervisor_ = std::make_unique<supervise::CountingSupervisor>(
        supervise::openSupervisor(settings_.supervisor, o));
  }
  return *supervisor_;
}

supervise::CallCounts Context::supervisorCalls() const {
  return supervisor_ ? supervisor_->counts() : supervise::CallCounts{};
}

void Context::expectServices(std::vector<std::string> names, bool detailed) {
  expected_ = std::move(names);
  detailed_ = detailed;
  services_.reset();
}

const supervise::ServiceState& Context::service(const std::string& name) {
  if (!services_) services_ = supervisor().observe(expected_, detailed_);
  auto it = services_->find(name);
  if (it == services_->end()) {
    // Not expected (a pruned process): observe it alone.
    auto one = supervisor().observe({name}, detailed_);
    it = services_->emplace(name, one[name]).first;
  }
  return it->second;
}

std::string Context::bundleDir(const Digest& bundle) const {
  return settings_.stateDir + "/bundles/" + bundle.hex();
}

}  // namespace mesh::apply
