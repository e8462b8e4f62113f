// `directory`: a directory with a mode and ownership. Its content is not managed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/applier.hh"
#include "apply/kinds/attributes.hh"
#include "apply/originals.hh"
#include "decl/want.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

Attributes attributesOf(const decl::DirectorySpec& s) {
  return {s.mode, s.owner, s.group};
}

class DirectoryApplier : public Applier {
 public:
  // Of the spec alone: kept in the compiled form (decl/want.hh).
  Digest want(Context&, const decl::Resource& r) const override { return decl::wantOf(r); }

  // The machine against the declaration alone: neither the want nor the record
  // changes what is decided (the cycle words the reason from them); the record
  // says only whether a write is the first over what was there.
  Decision reconcile(Step& step, const decl::Resource& r, const Digest& /*want*/,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::DirectorySpec>(r.spec);
    const auto attrs = attributesOf(s);
    const Ownership ids = resolveOwnership(ctx, attrs);
    const auto place = ctx.place(s.path);
    const auto st = ctx.look(place);

    std::string drift = "deleted";
    if (st && S_ISDIR(st->st_mode)) {
      auto d = attributeDrift(*st, attrs, ids);
      if (!d) return Decision::unchanged();
      drift = *d;
    } else if (st) {
      throw InTheWay("a {} is in the way at {}; remove it or declare another path",
                     S_ISLNK(st->st_mode) ? "symbolic link" : "file", s.path);
    }

    step.change([&] {
      // A directory mesh-host did not make: its mode and owner kept first.
      if (st && firstWrite(rec)) ctx.originals().keep(r, place, *st);
      std::vector<std::string> created;
      const auto at = ctx.makePlace(s.path, &created);
      try {
        // 0700 until owned and moded as declared: nobody reaches in meanwhile.
        if (!st && ::mkdirat(at.dir, at.name.c_str(), 0700) != 0 && errno != EEXIST)
          throwSys(fmt::format("cannot create directory {}", s.path));
        // The attributes are set through a descriptor opened without following a
        // link: a link swapped in after the look above is refused, not chmod-ed.
        Fd dir(::openat(at.dir, at.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!dir) {
          if (errno == ELOOP || errno == ENOTDIR)
            throw PathRefused(
                "{} was replaced by a non-directory while being converged; "
                "nothing was changed",
                s.path);
          throwSys(fmt::format("cannot open directory {}", s.path));
        }
        setAttributes(dir.get(), attrs, ids, s.path);
        syncFd(at.dir, s.path);
      } catch (...) {
        ctx.removeCreated(created);
        throw;
      }
    });
    const std::string detail = fmt::format("mode {}", modeString(attrs.mode));
    return Decision::act(st.has_value(), drift, detail);
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    Context& ctx = step.ctx();
    const auto place = ctx.place(rec.path);
    const auto st = ctx.look(place);
    if (!st) return Removal::removed("already gone");
    if (!S_ISDIR(st->st_mode)) return Removal::released("left in place: not a directory now");
    bool removed = true;
    step.change([&] {
      if (::unlinkat(place.dir, place.name.c_str(), AT_REMOVEDIR) == 0) {
        syncFd(place.dir, rec.path);
        ctx.forgetDirs();
        return;
      }
      if (errno == ENOTEMPTY || errno == EEXIST)
        removed = false;
      else if (errno != ENOENT)
        throwSys(fmt::format("cannot remove directory {}", rec.path));
    });
    if (!removed) return Removal::released("left in place: holds files mesh-host did not write");
    return Removal::removed(ctx.planning() ? "would delete" : "deleted");
  }
};

}  // namespace

const Applier& directoryApplier() {
  static const DirectoryApplier a;
  return a;
}

}  // namespace mesh::apply
