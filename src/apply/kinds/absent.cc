// `absent`: nothing at `path` — a file, a link (the link itself; its target is
// never touched) or an empty directory is removed; a non-empty directory only
// with `recursive = true`. What it removes is kept first like an adopted
// original (apply/originals.hh), so that a rollback to a generation before it
// puts it back; leaving the declaration otherwise does nothing to the path.
// Nothing inside the path is followed: the parent is reached beneath the root
// without following a link, and a tree is walked and removed with O_NOFOLLOW.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "apply/applier.hh"
#include "apply/originals.hh"
#include "decl/want.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

// How many entries a directory holds (at most 2 counted: empty or not).
bool isEmptyDir(int parent, const std::string& name, const std::string& shown) {
  Fd d(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) throwSys(fmt::format("cannot open {}", shown));
  DIR* listing = ::fdopendir(d.release());
  if (!listing) throwSys(fmt::format("cannot read {}", shown));
  bool empty = true;
  while (const dirent* e = ::readdir(listing)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(listing);
  return empty;
}

const char* whatIs(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a file";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISDIR(st.st_mode)) return "a directory";
  return "a special file";
}

class AbsentApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override { return decl::wantOf(r); }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest& /*want*/,
                     const state::Record* /*rec*/) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::AbsentSpec>(r.spec);
    const auto place = ctx.place(s.path);
    const auto st = ctx.look(place);
    if (!st) return Decision::unchanged();
    const bool dir = S_ISDIR(st->st_mode);
    const bool empty = dir && isEmptyDir(place.dir, place.name, s.path);
    if (dir && !empty && !s.recursive)
      throw Error(
          "{} is a directory that is not empty; add recursive = true to {} to remove it and all "
          "it holds, or empty it",
          s.path, r.id);
    std::string kept;
    step.change([&] {
      const Original o = ctx.originals().keep(r, place, *st, Originals::Depth::Tree);
      kept = o.restorable() ? "kept" : "not kept: too large to keep, nothing will be given back";
      if (dir && !empty) {
        removeTreeAt(place.dir, place.name, s.path);
      } else if (::unlinkat(place.dir, place.name.c_str(), dir ? AT_REMOVEDIR : 0) != 0 &&
                 errno != ENOENT) {
        throwSys(fmt::format("cannot remove {}", s.path));
      }
      syncFd(place.dir, s.path);
    });
    const std::string what =
        dir && !empty ? "a directory and all it held" : std::string(whatIs(*st));
    return Decision::removed(ctx.planning() ? what : fmt::format("{}; {}", what, kept));
  }

  // Leaving the declaration does nothing to the path (a rollback puts back what
  // was removed: the pruner, through apply/originals.hh).
  Removal remove(Step&, const state::Record& rec) const override {
    return Removal::released(
        fmt::format("left as it is: an absent no longer declared does nothing to {}", rec.path));
  }
};

}  // namespace

const Applier& absentApplier() {
  static const AbsentApplier a;
  return a;
}

}  // namespace mesh::apply
