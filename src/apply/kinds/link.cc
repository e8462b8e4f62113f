// `link`: a symbolic link to `target`, kept verbatim.
#include <unistd.h>

#include "apply/applier.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

std::optional<std::string> readLink(const std::string& path) {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n < 0) {
    if (errno == ENOENT || errno == EINVAL) return std::nullopt;
    throwSys(fmt::format("cannot read link {}", path));
  }
  buf.resize(static_cast<size_t>(n));
  return buf;
}

class LinkApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    return WantBuilder("link/1").add("target", std::get<decl::LinkSpec>(r.spec).target).finish();
  }

  Outcome reconcile(Context& ctx, const decl::Resource& r, const Digest& want,
                    const state::Record* rec) const override {
    const auto& s = std::get<decl::LinkSpec>(r.spec);
    const std::string host = ctx.hostPath(s.path);
    const auto st = lstatPath(host);

    std::string drift = "deleted";
    if (st && S_ISLNK(st->st_mode)) {
      auto target = readLink(host).value_or("");
      if (target == s.target) {
        Outcome o = Outcome::unchanged(want, reasonUnchanged(rec));
        o.observed = s.target;
        return o;
      }
      drift = fmt::format("points to {}", target);
    } else if (st) {
      throw Error("a {} is in the way at {}; remove it or declare another path",
                  S_ISDIR(st->st_mode) ? "directory" : "file", s.path);
    }

    const std::string reason = reasonToAct(rec, want, st.has_value(), drift);
    ctx.change([&] { atomicSymlink(host, s.target); });
    const std::string detail = fmt::format("-> {}", s.target);
    Outcome o =
        st ? Outcome::updated(want, reason, detail) : Outcome::created(want, reason, detail);
    o.observed = s.target;
    return o;
  }

  Outcome remove(Context& ctx, const state::Record& rec) const override {
    const std::string host = ctx.hostPath(rec.path);
    const auto st = lstatPath(host);
    if (!st) return Outcome::removed(reasons::kNoLongerDeclared, "already gone");
    if (!S_ISLNK(st->st_mode) || readLink(host).value_or("") != rec.observed)
      return Outcome::removed(reasons::kNoLongerDeclared,
                              "released; left in place: changed since mesh-host wrote it");
    ctx.change([&] {
      if (::unlink(host.c_str()) != 0 && errno != ENOENT)
        throwSys(fmt::format("cannot remove link {}", rec.path));
    });
    return Outcome::removed(reasons::kNoLongerDeclared, "deleted");
  }
};

}  // namespace

const Applier& linkApplier() {
  static const LinkApplier a;
  return a;
}

}  // namespace mesh::apply
