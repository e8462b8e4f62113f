// Adopt and give back: what mesh-host first overwrites at a declared path (a
// file's content, mode or owner; a link; a directory's mode or owner), and what
// an `absent` removes, is kept first, so that it can be put back when the
// resource leaves the declaration (or, for an `absent`, on a rollback).
//
// Where: <state-dir>/originals/ (0700, root-only): the bytes kept, content-
// addressed, as sha256-<hex> (0600) — a file's content, a link's target, a
// tree's manifest (originals_tree.cc) —, and one entry per resource,
// ids/<id> (0600): what was there (type, mode, owner, group, the digest of its
// bytes) and the resource's `on-remove`. Every write is atomicWriteAt's (temp
// file, fsync, rename, fsync of the directory), reached beneath the state dir
// without following a link; every act on the declared path goes through the
// cycle's places (fd-relative, no link followed).
//
// Order, for a crash at any point: the original is kept (synced) before the
// first write over it, and an entry is forgotten only once no record of its
// resource is left (the pruner's sweep, a cycle later), so putting it back runs
// again after a crash and writes the same thing: restoring is idempotent.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apply/context.hh"
#include "apply/outcome.hh"
#include "apply/step.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::apply {

// A tree kept whole up to this many bytes of file content (and kTreeKeepEntries
// entries); above it nothing is kept, and the resource says so.
inline constexpr uint64_t kTreeKeepBytes = uint64_t{64} << 20;
inline constexpr uint64_t kTreeKeepEntries = 10000;

struct Original {
  // Nothing: mesh-host created the path from nothing; the entry holds only the
  // resource's on-remove. TooLarge: a tree above the bound, not kept.
  enum class Type { Nothing, File, Link, Directory, Tree, TooLarge };
  Type type = Type::Nothing;
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  uint64_t size = 0;  // bytes of content (a tree's: all its files')
  std::string bytes;  // digest ("sha256:…") of what is kept: content, target, manifest
  decl::OnRemove onRemove = decl::OnRemove::Restore;
  std::string kind;  // the resource kind that kept it
  std::string path;  // the declared path it was kept from (empty: an entry of no path)

  // Whether it was kept from `at`: what was at one path is never put at another
  // (a resource that moved gives it back where it was, cycle/pruner.cc).
  bool keptFrom(const std::string& at) const { return path.empty() || path == at; }

  // "a file of 12 bytes, mode 0640, owner 0:0" (for outcomes, history, plans).
  std::string describe() const;
  bool restorable() const { return type != Type::Nothing && type != Type::TooLarge; }
};

// Whether a write for a resource with this record is over something mesh-host
// did not write: no record, or one of a resource only ever adopted as found.
inline bool firstWrite(const state::Record* rec) {
  return !rec || rec->changes == 0;
}

class Originals {
 public:
  explicit Originals(Context& ctx) : ctx_(ctx) {}

  std::optional<Original> find(const std::string& id);
  // The ids that have an entry (one readdir, at first use in a cycle).
  const std::set<std::string>& ids();

  // Keeps what is at `place` (lstat `st`) for resource `r`, unless an entry of
  // that path is there already (only the first write over it keeps). Call inside the step's
  // gate, before the write. A directory is kept whole with Depth::Tree (an
  // absent removes it all), else its mode and owner only. Returns the entry.
  enum class Depth { Attributes, Tree };
  Original keep(const decl::Resource& r, const Context::Place& place, const struct stat& st,
                Depth depth = Depth::Attributes);
  // Records `r`'s on-remove when it differs from its entry's (or, with no entry,
  // from the default): a created-from-nothing path with on-remove = "keep".
  // Applying only.
  void noteOnRemove(const decl::Resource& r);

  // Puts `o` back at `path` (a plan: says it would). Idempotent.
  Removal giveBack(Step& step, const std::string& path, const Original& o);
  // Whether `path` holds `o` already — its type, bytes, mode and owner (a tree:
  // every entry): put back by a cycle that a crash cut short, or never changed
  // since (mesh-host wrote what was there). Putting it back again changes
  // nothing, so it restarts nothing (Removal::alreadyRestored).
  bool holds(const std::string& path, const Original& o);

  // Drops the entry of `id` (its bytes stay until `gc`).
  void forget(const std::string& id);

 private:
  int dir(bool create);  // <state-dir>/originals, -1 when missing and !create
  void write(const std::string& id, const Original& o);
  std::string keepBytes(std::string_view bytes);  // → "sha256:…"
  std::optional<std::string> readBytes(const std::string& digest);
  void giveBackTree(const Context::Place& place, const std::optional<struct stat>& st,
                    const std::string& path, const Original& o, const std::string& manifest);

  Context& ctx_;
  std::optional<Fd> dir_;
  std::optional<std::set<std::string>> ids_;
  std::map<std::string, Original> read_;  // entries read or written, by id
};

// For `history`: the entry kept for `id` under stateDir, read by path (nullopt
// when there is none, or it cannot be read: a non-root reader may not).
std::optional<Original> readOriginal(const std::string& stateDir, const std::string& id);

// For `gc`: what <state-dir>/originals holds that no entry still needs — the
// entries whose resource `needed` does not name (no record, not declared), and
// the kept bytes no remaining entry (or tree manifest of one) names — as paths.
std::vector<std::string> originalsUnneeded(const std::string& stateDir,
                                           const std::function<bool(const std::string&)>& needed);

// Trees (originals_tree.cc): the manifest of what is beneath an open directory,
// its files kept as bytes by `keepBytes`; nullopt when above the bound.
struct TreeKeep {
  std::string manifest;
  uint64_t bytes = 0;
};
std::optional<TreeKeep> keepTree(int dirFd, const std::string& shown,
                                 const std::function<std::string(std::string_view)>& keepBytes);
// Whether the tree beneath an open directory is within the bound above (what
// keepTree would keep), measured without reading a file.
bool treeWithinKeepBound(int dirFd, const std::string& shown);
// Makes, at `name` in `parent` (nothing there), the tree a manifest describes.
void restoreTree(int parent, const std::string& name, const std::string& shown,
                 const std::string& manifest,
                 const std::function<std::optional<std::string>(const std::string&)>& readBytes);

}  // namespace mesh::apply
