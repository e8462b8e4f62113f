#include "apply/context.hh"

#include <fcntl.h>
#include <unistd.h>

#include <system_error>
#include <utility>

#include "apply/look_ahead.hh"
#include "apply/originals.hh"
#include "state/state_dir.hh"
#include "supervise/fault.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/open_files.hh"

namespace mesh::apply {

Context::Context(Settings s) : settings_(std::move(s)) {
  while (settings_.root.size() > 1 && settings_.root.back() == '/') settings_.root.pop_back();
}

Context::~Context() = default;

Context::Place Context::place(const std::string& declared) {
  // Declared paths are absolute and normalised: "/a/b/c" → parent "a/b", name "c".
  auto [parent, name] = splitParent(std::string_view(declared).substr(1));
  Place p{FdRef(), std::string(name), declared};
  const std::string key(parent);
  auto it = dirs_.find(key);
  if (it == dirs_.end()) {
    if (!root_) root_ = std::make_unique<Beneath>(settings_.root, "");
    auto fd = root_->openDir(key);
    if (!fd) return p;
    it = keepDir(key, std::move(*fd));
  }
  p.dir = it->second;
  if (sweep_ && applying()) {
    beforeAnyChange();  // sweeping is a change too: not on a damaged store
    removeLeftoversAt(p.dir, p.name, declared);
  }
  return p;
}

std::unordered_map<std::string, Fd>::iterator Context::keepDir(const std::string& key, Fd fd) {
  // Bounded, within the limit on open files (util/open_files.hh): a
  // declaration spread over very many directories reopens some. (Only when a
  // new one is kept: a place returned before stays valid while it is used.)
  if (dirs_.size() >= openFilesShare(1024, 4)) dirs_.clear();
  return dirs_.emplace(key, std::move(fd)).first;
}

Context::Place Context::makePlace(const std::string& declared, std::vector<std::string>* created,
                                  Beneath::Synced synced) {
  Place p = place(declared);
  if (p.dir >= 0) return p;
  auto [parent, name] = splitParent(std::string_view(declared).substr(1));
  const std::string key(parent);
  std::vector<std::string> made;
  p.dir = keepDir(key, root_->makeDirs(key, &made, synced))->second;
  if (synced == Beneath::Synced::Later)
    for (const auto& dir : made) unsyncedParents_.emplace_back(splitParent(dir).first);
  if (created) created->insert(created->end(), made.begin(), made.end());
  return p;
}

void Context::removeCreated(const std::vector<std::string>& created) {
  if (created.empty()) return;
  forgetDirs();
  root_->removeCreated(created);
}

void Context::lookAhead(const std::vector<decl::Resource>& resources) {
  stopLookingAhead();
  if (sweep_ && applying()) return;  // every place is swept, so looked at, in turn
  size_t files = 0;
  for (const auto& r : resources) files += LookAhead::looksAt(r) ? 1 : 0;
  if (files < LookAhead::kFewest) return;
  try {
    if (!root_) root_ = std::make_unique<Beneath>(settings_.root, "");
    ahead_ = std::make_unique<LookAhead>(*root_, resources);
  } catch (const Error&) {              // no root: each resource says so in turn
  } catch (const std::system_error&) {  // no thread to be had: the cycle looks in turn
  }
}

void Context::stopLookingAhead() {
  ahead_.reset();
}

std::optional<Fingerprint> Context::lookedAhead(const decl::Resource& r) {
  if (!ahead_) return std::nullopt;
  // Where place() sweeps, or a plan counts something removed, every path is
  // placed and looked at in turn.
  if ((sweep_ && applying()) || (planning() && !planRemoved_.empty())) return std::nullopt;
  return ahead_->take(r);
}

std::optional<struct stat> Context::look(const Place& p) {
  if (p.dir < 0) return std::nullopt;
  if (planning() && !planRemoved_.empty() && planRemoved_.count(p.shown)) return std::nullopt;
  return statAt(p.dir, p.name, p.shown);
}

void Context::stageWrite(const Place& to, std::string_view content, mode_t mode, Ownership owner,
                         Observe observe) {
  writes_.stage(to.dir, to.name, content, mode, owner, to.shown);
  observers_.push_back(std::move(observe));
}

void Context::syncMadeDirs() {
  auto parents = std::move(unsyncedParents_);
  unsyncedParents_.clear();
  for (const auto& parent : parents) {
    if (auto fd = root_->openDir(parent)) syncFd(fd->get(), root_->shown(parent));  // else gone
  }
}

std::vector<Context::Committed> Context::commitWrites() {
  // The directories made for staged files durable in their parents with the
  // files (a parent gone meanwhile has nothing left to sync).
  for (const auto& parent : std::exchange(unsyncedParents_, {})) {
    try {
      if (auto fd = root_->openDir(parent)) writes_.syncDirectory(fd->get(), root_->shown(parent));
    } catch (const Error&) {  // swapped for a link since: not ours to sync
    }
  }
  auto observers = std::move(observers_);
  observers_.clear();
  auto results = writes_.commit();
  std::vector<Committed> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    out[i].error = std::move(results[i].error);
    if (!out[i].error && observers[i]) out[i].observed = observers[i](results[i].st);
  }
  return out;
}

void Context::dropWritesFrom(size_t from) {
  writes_.dropFrom(from);
  if (from < observers_.size()) observers_.resize(from);
}

blob::BlobSource& Context::blobs() {
  if (!blobs_) {
    blobs_ = settings_.openBlobs
                 ? settings_.openBlobs(settings_.blobs, state::StateDir{settings_.stateDir}.blobs())
                 : blob::openDirectorySource(settings_.blobs);
    if (byteProgress) blobs_->setProgress(byteProgress);
  }
  return *blobs_;
}

const trust::NodeKey& Context::nodeKey() {
  if (!key_) {
    if (applying())
      key_ = trust::NodeKey::loadOrCreate(settings_.stateDir);
    else if (auto k = trust::NodeKey::load(settings_.stateDir))
      key_ = std::move(*k);
    else
      key_ = trust::NodeKey::ephemeral();
  }
  return *key_;
}

supervise::Supervisor& Context::supervisor() {
  if (!supervisor_) {
    supervise::Options o;
    o.stateDir = settings_.stateDir;
    o.unitDir = settings_.unitDir;
    supervisor_ = std::make_unique<supervise::CountingSupervisor>(supervise::withFaults(
        settings_.makeSupervisor ? settings_.makeSupervisor()
                                 : supervise::openSupervisor(settings_.supervisor, o),
        cycle_));
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
  static const supervise::ServiceState kUninstalled;
  if (planning() && planUninstalled_.count(name)) return kUninstalled;
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
  return state::StateDir{settings_.stateDir}.bundle(bundle.hex());
}

Beneath& Context::stateDirBeneath() {
  if (!stateDir_) stateDir_ = std::make_unique<Beneath>(settings_.stateDir, settings_.stateDir);
  return *stateDir_;
}

Originals& Context::originals() {
  if (!originals_) originals_ = std::make_unique<Originals>(*this);
  return *originals_;
}

}  // namespace mesh::apply
