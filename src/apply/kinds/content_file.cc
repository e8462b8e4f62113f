#include "apply/kinds/content_file.hh"

#include <unistd.h>

#include "apply/applier.hh"
#include "apply/diff.hh"
#include "util/error.hh"

namespace mesh::apply {

Outcome reconcileContentFile(Context& ctx, const std::string& declaredPath, const Attributes& attrs,
                             const Digest& want, const state::Record* rec,
                             const WantedContent& content) {
  const std::string host = ctx.hostPath(declaredPath);
  const Ownership ids = resolveOwnership(attrs);
  const auto st = ctx.lstatDeclared(declaredPath);
  const auto prev = rec ? ContentObserved::parse(rec->observed) : ContentObserved{};

  std::string drift;
  if (st && S_ISREG(st->st_mode)) {
    // Fast path: nothing has written the file since we recorded it.
    if (rec && rec->wrote == want.str() && prev.fingerprint &&
        *prev.fingerprint == Fingerprint::of(*st) && prev.content == content.digest) {
      Outcome o = Outcome::unchanged(want, reasonUnchanged(rec));
      o.observed = rec->observed;
      return o;
    }
    const std::string held = content.digestOfFile(host);
    if (held != content.digest)
      drift = "content changed";
    else if (auto d = attributeDrift(*st, attrs, ids))
      drift = *d;
    else {
      Outcome o = Outcome::unchanged(want, reasonUnchanged(rec));
      o.observed = ContentObserved::of(*st, content.digest).str();
      return o;
    }
  } else if (st && !S_ISLNK(st->st_mode)) {
    throw Error("{} is in the way at {}; remove it or declare another path",
                S_ISDIR(st->st_mode) ? "a directory" : "a special file", declaredPath);
  } else if (st) {
    drift = "a symbolic link replaced it";
  } else {
    drift = "deleted";
  }

  const bool there = st.has_value();
  const std::string reason = reasonToAct(rec, want, there, drift);
  std::string diff;
  std::string detail;
  content.withBytes([&](std::string_view bytes) {
    detail = content.secret
                 ? fmt::format("secret, mode {}", modeString(attrs.mode))
                 : fmt::format("{} bytes, mode {}", bytes.size(), modeString(attrs.mode));
    if (ctx.planning())
      diff = content.secret ? "(secret changed)\n"
                            : unifiedDiff(there && S_ISREG(st->st_mode) ? host : std::string(),
                                          bytes, declaredPath);
    ctx.change([&] { atomicWrite(host, bytes, attrs.mode & 07777, ids); });
  });

  Outcome o =
      there ? Outcome::updated(want, reason, detail) : Outcome::created(want, reason, detail);
  if (ctx.applying()) {
    if (auto now = lstatPath(host)) o.observed = ContentObserved::of(*now, content.digest).str();
  }
  o.diff = std::move(diff);
  return o;
}

Outcome removeContentFile(Context& ctx, const state::Record& rec,
                          const std::function<std::string(const std::string&)>& digestOfFile) {
  const std::string host = ctx.hostPath(rec.path);
  const auto st = lstatPath(host);
  if (!st) return Outcome::removed(reasons::kNoLongerDeclared, "already gone");
  if (!S_ISREG(st->st_mode))
    return Outcome::removed(reasons::kNoLongerDeclared, "released; left in place: not a file now");
  const auto prev = ContentObserved::parse(rec.observed);
  const bool untouched = prev.fingerprint && *prev.fingerprint == Fingerprint::of(*st);
  if (!untouched && (prev.content.empty() || digestOfFile(host) != prev.content))
    return Outcome::removed(reasons::kNoLongerDeclared,
                            "released; left in place: modified since mesh-host wrote it");
  ctx.change([&] {
    if (::unlink(host.c_str()) != 0 && errno != ENOENT)
      throwSys(fmt::format("cannot remove {}", rec.path));
    syncDir(parentOf(host));
  });
  return Outcome::removed(reasons::kNoLongerDeclared, "deleted");
}

}  // namespace mesh::apply
