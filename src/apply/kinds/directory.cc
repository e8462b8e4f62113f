// `directory`: a directory with a mode and ownership. Its content is not managed.
#include <sys/stat.h>
#include <unistd.h>

#include "apply/applier.hh"
#include "apply/kinds/attributes.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

Attributes attributesOf(const decl::DirectorySpec& s) {
  return {s.mode, s.owner, s.group};
}

class DirectoryApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    WantBuilder w("directory/1");
    addAttributes(w, attributesOf(std::get<decl::DirectorySpec>(r.spec)));
    return w.finish();
  }

  Outcome reconcile(Context& ctx, const decl::Resource& r, const Digest& want,
                    const state::Record* rec) const override {
    const auto& s = std::get<decl::DirectorySpec>(r.spec);
    const auto attrs = attributesOf(s);
    const std::string host = ctx.hostPath(s.path);
    const Ownership ids = resolveOwnership(attrs);
    const auto st = lstatPath(host);

    std::string drift = "deleted";
    if (st && S_ISDIR(st->st_mode)) {
      auto d = attributeDrift(*st, attrs, ids);
      if (!d) return Outcome::unchanged(want, reasonUnchanged(rec));
      drift = *d;
    } else if (st) {
      throw Error("a {} is in the way at {}; remove it or declare another path",
                  S_ISLNK(st->st_mode) ? "symbolic link" : "file", s.path);
    }

    const std::string reason = reasonToAct(rec, want, st.has_value(), drift);
    ctx.change([&] {
      if (!st) {
        makeDirs(parentOf(host));
        if (::mkdir(host.c_str(), 0700) != 0 && errno != EEXIST)
          throwSys(fmt::format("cannot create directory {}", s.path));
      }
      setAttributes(host, attrs, ids);
      syncDir(parentOf(host));
    });
    const std::string detail = fmt::format("mode {}", modeString(attrs.mode));
    return st ? Outcome::updated(want, reason, detail) : Outcome::created(want, reason, detail);
  }

  Outcome remove(Context& ctx, const state::Record& rec) const override {
    const std::string host = ctx.hostPath(rec.path);
    const auto st = lstatPath(host);
    if (!st) return Outcome::removed(reasons::kNoLongerDeclared, "already gone");
    if (!S_ISDIR(st->st_mode))
      return Outcome::removed(reasons::kNoLongerDeclared,
                              "released; left in place: not a directory now");
    bool removed = true;
    ctx.change([&] {
      if (::rmdir(host.c_str()) == 0) return;
      if (errno == ENOTEMPTY || errno == EEXIST)
        removed = false;
      else if (errno != ENOENT)
        throwSys(fmt::format("cannot remove directory {}", rec.path));
    });
    if (!removed)
      return Outcome::removed(reasons::kNoLongerDeclared,
                              "released; left in place: holds files mesh-host did not write");
    return Outcome::removed(reasons::kNoLongerDeclared, "deleted");
  }
};

}  // namespace

const Applier& directoryApplier() {
  static const DirectoryApplier a;
  return a;
}

}  // namespace mesh::apply
