#include "apply/kinds/content_file.hh"

#include <fcntl.h>
#include <unistd.h>

#include "apply/applier.hh"
#include "apply/diff.hh"
#include "apply/originals.hh"
#include "util/error.hh"

namespace mesh::apply {

namespace {

// A plan shows no old or new bytes of a secret: a credential now or before, or
// a file nobody but its owner may read.
bool mayShowContent(Context& ctx, const std::string& path, const std::optional<struct stat>& st,
                    const Attributes& attrs, const WantedContent& content) {
  if (content.secret || ctx.wasSecret(path)) return false;
  if (st && S_ISREG(st->st_mode) && (st->st_mode & S_IROTH) == 0) return false;
  return (attrs.mode & S_IROTH) != 0;
}

std::string hiddenDiff(const std::optional<struct stat>& st, const Attributes& attrs,
                       const WantedContent& content) {
  if (content.secret) return "(secret changed)\n";
  const mode_t shownMode =
      st && S_ISREG(st->st_mode) && (st->st_mode & S_IROTH) == 0 ? st->st_mode : attrs.mode;
  return fmt::format("(content of a {} file changed; diff not shown)\n", modeString(shownMode));
}

}  // namespace

Decision reconcileContentFile(Step& step, const decl::Resource& r, const Attributes& attrs,
                              const Digest& want, const state::Record* rec,
                              const WantedContent& content) {
  Context& ctx = step.ctx();
  const std::string& declaredPath = r.path();
  const Ownership ids = resolveOwnership(ctx, attrs);
  // Fast path: nothing has written the file since we recorded it — its
  // fingerprint is the one recorded, taken ahead (apply/look_ahead.hh) or now.
  const auto asRecorded = [&](const Fingerprint& now) {
    return S_ISREG(now.mode) && rec && want.is(rec->wrote) &&
           ContentObserved::holds(rec->observed, now, content.digest);
  };
  const auto unchanged = [] {
    Decision o = Decision::unchanged();
    o.observedAsRecorded = true;
    return o;
  };
  if (const auto ahead = ctx.lookedAhead(r); ahead && asRecorded(*ahead)) return unchanged();
  const auto place = ctx.place(declaredPath);
  const auto st = ctx.look(place);

  std::string drift;
  std::optional<Fd> old;  // the file there now, opened without following a link
  if (st && S_ISREG(st->st_mode)) {
    if (asRecorded(Fingerprint::of(*st))) return unchanged();
    old = openFileAt(place.dir, place.name, declaredPath);
    const std::string held = old ? content.digestOfFile(old->get(), declaredPath) : std::string();
    if (held != content.digest)
      drift = "content changed";
    else if (auto d = attributeDrift(*st, attrs, ids))
      drift = *d;
    else {
      Decision o = Decision::unchanged();
      o.observed = ContentObserved::of(*st, content.digest).str();
      return o;
    }
  } else if (st && !S_ISLNK(st->st_mode)) {
    throw InTheWay("{} is in the way at {}; remove it or declare another path",
                   S_ISDIR(st->st_mode) ? "a directory" : "a special file", declaredPath);
  } else if (st) {
    drift = "a symbolic link replaced it";
  } else {
    drift = "deleted";
  }

  std::string diff;
  std::string detail;
  content.withBytes([&](std::string_view bytes) {
    detail = content.secret
                 ? fmt::format("secret, mode {}", modeString(attrs.mode))
                 : fmt::format("{} bytes, mode {}", bytes.size(), modeString(attrs.mode));
    if (ctx.planning() || ctx.settings().diffs) {
      if (!mayShowContent(ctx, declaredPath, st, attrs, content))
        diff = hiddenDiff(st, attrs, content);
      else if (old)
        diff = unifiedDiff(readAll(old->get(), declaredPath), bytes, declaredPath);
      else
        diff = unifiedDiff(std::nullopt, bytes, declaredPath);
    }
    step.change([&] {
      // What mesh-host did not write (a file, or a link where a file is
      // declared): kept, synced, before the staged write replaces it.
      if (st && firstWrite(rec)) ctx.originals().keep(r, place, *st);
      std::vector<std::string> created;
      const auto to = ctx.makePlace(declaredPath, &created, Beneath::Synced::Later);
      try {
        // In place, and `observed` filled, when the cycle commits its batch.
        ctx.stageWrite(to, bytes, attrs.mode & 07777, ids,
                       [digest = content.digest](const struct stat& now) {
                         return ContentObserved::of(now, digest).str();
                       });
      } catch (...) {
        ctx.removeCreated(created);
        throw;
      }
    });
  });

  Decision o = Decision::act(st.has_value(), drift, detail);
  o.diff = std::move(diff);
  return o;
}

bool contentFileAsWritten(Context& ctx, const state::Record& rec,
                          const std::function<std::string(int, const std::string&)>& digestOfFile) {
  const auto place = ctx.place(rec.path);
  const auto st = ctx.look(place);
  if (!st || !S_ISREG(st->st_mode)) return !st;
  const auto prev = ContentObserved::parse(rec.observed);
  if (prev.fingerprint && *prev.fingerprint == Fingerprint::of(*st)) return true;
  auto fd = openFileAt(place.dir, place.name, rec.path);
  return !prev.content.empty() && fd && digestOfFile(fd->get(), rec.path) == prev.content;
}

Removal removeContentFile(Step& step, const state::Record& rec,
                          const std::function<std::string(int, const std::string&)>& digestOfFile) {
  Context& ctx = step.ctx();
  const auto place = ctx.place(rec.path);
  const auto st = ctx.look(place);
  if (!st) return Removal::removed("already gone");
  if (!S_ISREG(st->st_mode)) return Removal::released("left in place: not a file now");
  const auto prev = ContentObserved::parse(rec.observed);
  const bool untouched = prev.fingerprint && *prev.fingerprint == Fingerprint::of(*st);
  if (!untouched) {
    auto fd = openFileAt(place.dir, place.name, rec.path);
    if (prev.content.empty() || !fd || digestOfFile(fd->get(), rec.path) != prev.content)
      return Removal::released("left in place: modified since mesh-host wrote it");
  }
  step.change([&] {
    if (::unlinkat(place.dir, place.name.c_str(), 0) != 0 && errno != ENOENT)
      throwSys(fmt::format("cannot remove {}", rec.path));
    syncFd(place.dir, rec.path);
  });
  return Removal::removed(ctx.planning() ? "would delete" : "deleted");
}

}  // namespace mesh::apply
