// Paths resolved beneath a trusted directory (the --root, the state dir) without
// following any symbolic link: the one way mesh-host reaches a path it writes.
//
// Threat model: mesh-host runs as root; a local user owns some directory on the
// way to a declared path (an app directory declared with `owner = "app"`, a
// world-writable /tmp) and swaps a component for a link to /etc, at any moment,
// as often as they like. So a path string is never handed to the kernel after
// the top: each component is opened relative to the descriptor of the one
// before, O_NOFOLLOW | O_DIRECTORY (or all at once with openat2's
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and every later act — create, write,
// rename, chmod, chown, unlink — goes through the descriptor of the directory
// reached. A link planted after the walk changes nothing: the descriptor names
// the directory that was there, not a path. systemd's chase() is the anchor.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hh"
#include "util/fd.hh"

namespace mesh {

// A path that runs through something mesh-host will not pass: a symbolic link
// or a non-directory where a directory is needed. Nothing was written.
class PathRefused : public Error {
 public:
  using Error::Error;
  // What stands where a directory is needed, when a component does: a link, or
  // a non-directory (a file, a socket …). Other refusals (a path that is not
  // normalised, a directory swapped while it was opened) are Found::Other.
  enum class Found { Other, Link, NotDirectory };
  Found found = Found::Other;
  // The component refused, as shown ("/srv/app"); "" for Found::Other.
  std::string component;
};

class Beneath {
 public:
  // Opens `top` as the operator gave it (links in `top` itself are followed:
  // it is trusted). `shownPrefix` is put before "/<rel>" in messages: "" for the
  // root (so "etc/x" shows as the declared "/etc/x"), the state dir's path for it.
  Beneath(const std::string& top, std::string shownPrefix);

  int fd() const { return top_.get(); }
  // "/etc/x" for rel "etc/x" under the root.
  std::string shown(std::string_view rel) const;

  // The directory `rel` names ("" is the top; '/'-separated, normalised, no
  // leading slash), opened without following a link at any component. nullopt
  // when a component is missing. Throws PathRefused naming the component:
  // "/srv/app/conf is a symbolic link (owner uid 1001); mesh-host does not follow
  // links inside declared paths".
  std::optional<Fd> openDir(std::string_view rel) const;

  // The same, creating the missing directories 0755 and owned by root (by the
  // running user when not root) whatever the umask; each one is synced into its
  // parent — unless `synced` is Synced::Later: a caller who has them synced
  // later, together with its other writes (WriteBatch::syncDirectory). `created` receives the rel
  // paths made, outermost first.
  enum class Synced { Each, Later };
  Fd makeDirs(std::string_view rel, std::vector<std::string>* created = nullptr,
              Synced synced = Synced::Each) const;

  // Removes directories that makeDirs created (deepest first) when an act
  // failed, so a refused write leaves no trace; non-empty ones stay.
  void removeCreated(const std::vector<std::string>& created) const;

 private:
  std::optional<Fd> walk(std::string_view rel, bool create, std::vector<std::string>* created,
                         Synced synced = Synced::Each) const;
  [[noreturn]] void refuse(int dir, const std::string& component, std::string_view walked) const;

  Fd top_;
  std::string shownPrefix_;
};

// Splits "a/b/c" into its parent "a/b" and its name "c" ("" and "c" for "c").
std::pair<std::string_view, std::string_view> splitParent(std::string_view rel);

}  // namespace mesh
