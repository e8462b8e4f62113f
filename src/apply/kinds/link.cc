// `link`: a symbolic link to `target`, kept verbatim.
#include <unistd.h>

#include "apply/applier.hh"
#include "apply/originals.hh"
#include "decl/want.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

class LinkApplier : public Applier {
 public:
  // Of the spec alone: kept in the compiled form (decl/want.hh).
  Digest want(Context&, const decl::Resource& r) const override { return decl::wantOf(r); }

  // The machine against the declaration alone: neither the want nor the record
  // changes what is decided (the cycle words the reason from them); the record
  // says only whether a write is the first over what was there.
  Decision reconcile(Step& step, const decl::Resource& r, const Digest& /*want*/,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::LinkSpec>(r.spec);
    const auto place = ctx.place(s.path);
    const auto st = ctx.look(place);

    std::string drift = "deleted";
    if (st && S_ISLNK(st->st_mode)) {
      auto target = readLinkAt(place.dir, place.name, s.path).value_or("");
      if (target == s.target) {
        Decision o = Decision::unchanged();
        o.observed = s.target;
        return o;
      }
      drift = fmt::format("points to {}", target);
    } else if (st) {
      throw InTheWay("a {} is in the way at {}; remove it or declare another path",
                     S_ISDIR(st->st_mode) ? "directory" : "file", s.path);
    }

    step.change([&] {
      // A link mesh-host did not make: kept first.
      if (st && firstWrite(rec)) ctx.originals().keep(r, place, *st);
      std::vector<std::string> created;
      const auto at = ctx.makePlace(s.path, &created);
      try {
        atomicSymlinkAt(at.dir, at.name, s.target, s.path);
      } catch (...) {
        ctx.removeCreated(created);
        throw;
      }
    });
    const std::string detail = fmt::format("-> {}", s.target);
    Decision o = Decision::act(st.has_value(), drift, detail);
    o.observed = s.target;
    return o;
  }

  bool holdsWhatItWrote(Context& ctx, const state::Record& rec) const override {
    const auto place = ctx.place(rec.path);
    const auto st = ctx.look(place);
    return !st || (S_ISLNK(st->st_mode) &&
                   readLinkAt(place.dir, place.name, rec.path).value_or("") == rec.observed);
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    Context& ctx = step.ctx();
    const auto place = ctx.place(rec.path);
    const auto st = ctx.look(place);
    if (!st) return Removal::removed("already gone");
    if (!S_ISLNK(st->st_mode) ||
        readLinkAt(place.dir, place.name, rec.path).value_or("") != rec.observed)
      return Removal::released("left in place: changed since mesh-host wrote it");
    step.change([&] {
      if (::unlinkat(place.dir, place.name.c_str(), 0) != 0 && errno != ENOENT)
        throwSys(fmt::format("cannot remove link {}", rec.path));
      syncFd(place.dir, rec.path);
    });
    return Removal::removed(ctx.planning() ? "would delete" : "deleted");
  }
};

}  // namespace

const Applier& linkApplier() {
  static const LinkApplier a;
  return a;
}

}  // namespace mesh::apply
