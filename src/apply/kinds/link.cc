// `link`: a symbolic link to `target`, kept verbatim.
#include <unistd.h>

#include "apply/applier.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

class LinkApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    return WantBuilder("link/1").add("target", std::get<decl::LinkSpec>(r.spec).target).finish();
  }

  Outcome reconcile(Context& ctx, const decl::Resource& r, const Digest& want,
                    const state::Record* rec) const override {
    const auto& s = std::get<decl::LinkSpec>(r.spec);
    const auto place = ctx.place(s.path);
    const auto st = ctx.look(place);

    std::string drift = "deleted";
    if (st && S_ISLNK(st->st_mode)) {
      auto target = readLinkAt(place.dir, place.name, s.path).value_or("");
      if (target == s.target) {
        Outcome o = Outcome::unchanged(want, reasonUnchanged(rec));
        o.observed = s.target;
        return o;
      }
      drift = fmt::format("points to {}", target);
    } else if (st) {
      throw InTheWay("a {} is in the way at {}; remove it or declare another path",
                     S_ISDIR(st->st_mode) ? "directory" : "file", s.path);
    }

    const std::string reason = reasonToAct(rec, want, st.has_value(), drift);
    ctx.change([&] {
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
    Outcome o =
        st ? Outcome::updated(want, reason, detail) : Outcome::created(want, reason, detail);
    o.observed = s.target;
    return o;
  }

  Outcome remove(Context& ctx, const state::Record& rec) const override {
    const auto place = ctx.place(rec.path);
    const auto st = ctx.look(place);
    if (!st) return Outcome::removed(reasons::kNoLongerDeclared, "already gone");
    if (!S_ISLNK(st->st_mode) ||
        readLinkAt(place.dir, place.name, rec.path).value_or("") != rec.observed)
      return Outcome::released(reasons::kNoLongerDeclared,
                               "left in place: changed since mesh-host wrote it");
    ctx.change([&] {
      if (::unlinkat(place.dir, place.name.c_str(), 0) != 0 && errno != ENOENT)
        throwSys(fmt::format("cannot remove link {}", rec.path));
      syncFd(place.dir, rec.path);
    });
    return Outcome::removed(reasons::kNoLongerDeclared,
                            ctx.planning() ? "would delete" : "deleted");
  }
};

}  // namespace

const Applier& linkApplier() {
  static const LinkApplier a;
  return a;
}

}  // namespace mesh::apply
