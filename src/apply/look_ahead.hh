// The files a cycle is about to visit, looked at ahead of it on a second thread.
//
// A no-op cycle of many files is mostly one lstat per file (the fingerprint its
// fast path compares with the record, apply/kinds/content_file.cc), one after
// another. LookAhead takes those lstats on another thread, in the cycle's order,
// a bounded window ahead of it, so that on a node where nothing changed the
// cycle finds each file's fingerprint already taken and the two cores share the
// work: the 100,000-file no-op spends a third of its time in lstat
// (docs/performance.md, "Looking ahead").
//
// What makes a fingerprint taken ahead as good as one taken in turn:
//   - It is taken the same way: the parent opened beneath the root without
//     following a link (util/beneath.hh), then fstatat(AT_SYMLINK_NOFOLLOW).
//   - It is taken during the cycle, before the cycle changed anything: the
//     context stops the look-ahead, for good, at the cycle's first act
//     (Context::beforeAnyChange), and nothing taken is handed out after. What
//     someone else changes between the look and the cycle's turn is the same
//     race as a change just after a look in turn.
//   - It is only ever a reason to do nothing: the fast path uses it when it
//     matches the record; anything else (no fingerprint, another one, an error)
//     is looked at again, in turn, as before.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "decl/model.hh"
#include "util/beneath.hh"
#include "util/fs.hh"

namespace mesh::apply {

class LookAhead {
 public:
  // How far ahead of the cycle it may be, in resources (a fixed ring: memory
  // does not grow with the declaration).
  static constexpr size_t kWindow = 4096;
  // How far ahead of the cycle it starts again once the cycle caught it up.
  static constexpr size_t kLead = 64;
  // Fewer files than this are not worth a thread.
  static constexpr size_t kFewest = 256;

  // Whether `r` is looked at ahead: a file or a credential (the kinds whose
  // fast path is a fingerprint).
  static bool looksAt(const decl::Resource& r);

  // Starts looking at `resources` (the cycle's, in its order; they and `root`
  // outlive this object).
  LookAhead(const Beneath& root, std::span<const decl::Resource> resources);
  ~LookAhead();  // stops and joins
  LookAhead(const LookAhead&) = delete;
  LookAhead& operator=(const LookAhead&) = delete;

  // The fingerprint of what is at resources[i]'s path, if it was taken ahead
  // and something is there; nullopt otherwise (not yet, nothing there, a
  // missing or refused parent, an error). The cycle is now at i: what lies
  // before i is not looked at any more.
  std::optional<Fingerprint> take(const decl::Resource& r);
  // Where it stands, for tests: resources looked at so far.
  size_t looked() const { return looked_.load(); }

 private:
  struct Slot {
    std::atomic<size_t> taken{0};  // index + 1 of the fingerprint held; 0: none
    Fingerprint fingerprint;
  };
  void run();
  void lookInOrder();
  const Fd* parentOf(std::string_view rel);

  const Beneath& root_;
  const std::span<const decl::Resource> resources_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<size_t> at_{0};  // the index the cycle is at, + 1; 0 before its first
  std::atomic<bool> stop_{false};
  std::atomic<size_t> looked_{0};
  // The thread's own: parents opened so far (bounded; an Fd of -1 for one
  // missing or refused).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Fd, NameHash, std::equal_to<>> parents_;
  std::jthread thread_;
};

}  // namespace mesh::apply
