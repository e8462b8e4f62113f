// What file-like kinds (file, directory, credential) share: mode and ownership,
// how they enter a want, how drift in them is worded, how they are set; and the
// fast-path data remembered for a written file.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

#include "apply/context.hh"
#include "decl/model.hh"
#include "util/digest.hh"
#include "util/fs.hh"

namespace mesh::apply {

struct Attributes {
  mode_t mode = 0644;
  std::optional<decl::Principal> owner, group;
};

// Resolves declared names at the cycle's root (util/accounts.hh); throws
// Error("no user 'x' on this node"). A plan resolves an account the same plan
// would create (Context::accountPlanned) to an id of -1: not known yet.
Ownership resolveOwnership(Context& ctx, const Attributes& a);

void addAttributes(WantBuilder& w, const Attributes& a);

// "mode 0600, want 0644" / "owner 1234, want 0" — nullopt when as declared.
std::optional<std::string> attributeDrift(const struct stat& st, const Attributes& a,
                                          const Ownership& ids);

// Sets ownership, then mode (chown clears setuid bits), on an open descriptor:
// never on a path, which a link swapped in could redirect.
void setAttributes(int fd, const Attributes& a, const Ownership& ids, const std::string& shown);

std::string modeString(mode_t m);  // "0644"

// Remembered for a written file: its stat fingerprint (absent when it was taken
// too close to the write to be trusted) and the digest of its content.
struct ContentObserved {
  std::optional<Fingerprint> fingerprint;
  std::string content;  // "sha256:…" or "keyed:…"
  std::string str() const;
  [[nodiscard]] static ContentObserved parse(const std::string& text);  // empty on malformed
  // Whether `text` (str()) has a fingerprint equal to `now` and this content
  // digest: the fast path's question, answered without building a value.
  static bool holds(std::string_view text, const Fingerprint& now, std::string_view content);
  // Fresh data for `path` after it holds `content`.
  static ContentObserved of(const struct stat& st, std::string content);
};

}  // namespace mesh::apply
