#include "apply/look_ahead.hh"

#include <fcntl.h>

#include "util/open_files.hh"

namespace mesh::apply {

namespace {

// Closer ahead of the cycle than this, it starts again kLead further on.
constexpr size_t kNear = 2;
// Parents held open at once, at most (util/open_files.hh): a declaration
// spread over very many directories reopens some (as Context::place does).
size_t parentsHeld() {
  return openFilesShare(256, 16);
}

}  // namespace

bool LookAhead::looksAt(const decl::Resource& r) {
  return r.kind == decl::Kind::File || r.kind == decl::Kind::Credential;
}

LookAhead::LookAhead(const Beneath& root, std::span<const decl::Resource> resources)
    : root_(root), resources_(resources), slots_(std::make_unique<Slot[]>(kWindow)) {
  thread_ = std::jthread([this] { run(); });
}

LookAhead::~LookAhead() {
  stop_.store(true);
  at_.store(resources_.size());  // wakes a thread waiting for room
  at_.notify_all();
}

std::optional<Fingerprint> LookAhead::take(const decl::Resource& r) {
  const decl::Resource* first = resources_.data();
  if (std::less<>()(&r, first) || !std::less<>()(&r, first + resources_.size()))
    return std::nullopt;  // not one of the cycle's own
  const size_t i = static_cast<size_t>(&r - first);
  // Published before the slot is read: the thread writes no slot of index
  // i + kWindow or beyond from now on, so slot i stays as it is read.
  at_.store(i + 1);
  at_.notify_one();
  const Slot& s = slots_[i % kWindow];
  if (s.taken.load(std::memory_order_acquire) != i + 1) return std::nullopt;
  return s.fingerprint;
}

const Fd* LookAhead::parentOf(std::string_view rel) {
  auto it = parents_.find(rel);
  if (it == parents_.end()) {
    if (parents_.size() >= parentsHeld()) parents_.clear();
    std::optional<Fd> fd;
    try {
      fd = root_.openDir(rel);
    } catch (...) {  // refused or failed: looked at in turn, which says why
    }
    it = parents_.emplace(std::string(rel), fd ? std::move(*fd) : Fd()).first;
  }
  return it->second ? &it->second : nullptr;
}

void LookAhead::run() {
  try {
    lookInOrder();
  } catch (...) {  // (out of memory) it stops: the cycle looks at the rest in turn
  }
}

void LookAhead::lookInOrder() {
  const size_t n = resources_.size();
  size_t i = 0;
  while (i < n && !stop_.load(std::memory_order_relaxed)) {
    const size_t at = at_.load();
    // The cycle at index at - 1 (not started: at 0). Where it is or has been,
    // looking is no use, and just ahead of it, looking races it look for look:
    // both would lstat the same files. Start again a little further on.
    const size_t cycle = at == 0 ? 0 : at - 1;
    if (at > 0 && i < cycle + kNear) i = cycle + kLead;
    if (i >= n) break;
    // Its slot is free once the cycle is past the index kWindow before it.
    if (i >= cycle + kWindow) {
      at_.wait(at);  // until the cycle moves on (or stop)
      continue;
    }
    const decl::Resource& r = resources_[i];
    if (looksAt(r)) {
      const std::string& declared = r.path();
      if (declared.size() > 1 && declared[0] == '/') {
        // Declared paths are absolute and normalised: "/a/b/c" → parent "a/b",
        // name "c", which ends the declared string (so it ends with a NUL).
        const auto [parent, name] = splitParent(std::string_view(declared).substr(1));
        struct stat st {};
        if (const Fd* dir = parentOf(parent);
            dir && ::fstatat(dir->get(), name.data(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          Slot& s = slots_[i % kWindow];
          s.fingerprint = Fingerprint::of(st);
          s.taken.store(i + 1, std::memory_order_release);
        }
      }
      looked_.fetch_add(1);
    }
    ++i;
  }
}

}  // namespace mesh::apply
