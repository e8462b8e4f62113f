// `archive`: a bundle unpacked at `path`. One resource whose digest is the
// bundle's: unchanged while the unpacked tree is exactly as the bundle says
// (files edited, deleted or added inside it are drift). A new version is unpacked
// beside the old one and switched in with one atomic rename, so the tree is never
// seen half-unpacked.
#include "apply/applier.hh"
#include "apply/kinds/tree.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

bundle::Limits limitsOf(const decl::ArchiveSpec& s) {
  return {s.maxEntries, s.maxBytes};
}

class ArchiveApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource& r) const override {
    const auto& s = std::get<decl::ArchiveSpec>(r.spec);
    return WantBuilder("archive/1").add("bundle", s.bundle.str()).add("path", s.path).finish();
  }

  Outcome reconcile(Context& ctx, const decl::Resource& r, const Digest& want,
                    const state::Record* rec) const override {
    const auto& s = std::get<decl::ArchiveSpec>(r.spec);
    const std::string host = ctx.hostPath(s.path);
    const auto st = lstatPath(host);
    const auto limits = limitsOf(s);

    std::string drift = "deleted";
    if (st && S_ISDIR(st->st_mode)) {
      TreeObserved prev, now;
      if (rec && rec->wrote == want.str()) prev = TreeObserved::parse(rec->observed);
      auto difference = checkTree(ctx, host, s.bundle, limits, prev, now);
      if (!difference) {
        Outcome o = Outcome::unchanged(want, reasonUnchanged(rec));
        o.observed = now.str();
        return o;
      }
      drift = *difference;
    } else if (st) {
      throw Error("a {} is in the way at {}; remove it or declare another path",
                  S_ISLNK(st->st_mode) ? "symbolic link" : "file", s.path);
    }

    const std::string reason = reasonToAct(rec, want, st.has_value(), drift);
    const std::string blob = ctx.blobs().fetch(s.bundle);
    TreeObserved now;
    if (ctx.applying())
      now.manifest = unpackAndSwitch(blob, host, limits, st.has_value());
    else
      now.manifest = bundle::readManifest(blob, limits);
    const std::string detail =
        fmt::format("{} file(s) from {}", now.manifest->files(), s.bundle.shortStr());
    Outcome o =
        st ? Outcome::updated(want, reason, detail) : Outcome::created(want, reason, detail);
    o.observed = now.str();
    return o;
  }

  Outcome remove(Context& ctx, const state::Record& rec) const override {
    const std::string host = ctx.hostPath(rec.path);
    const auto st = lstatPath(host);
    if (!st) return Outcome::removed(reasons::kNoLongerDeclared, "already gone");
    auto prev = TreeObserved::parse(rec.observed);
    if (!S_ISDIR(st->st_mode) || !prev.manifest)
      return Outcome::removed(reasons::kNoLongerDeclared,
                              "released; left in place: not the tree mesh-host wrote");
    if (auto difference = bundle::verify(host, *prev.manifest, &prev.cache, nullptr))
      return Outcome::removed(reasons::kNoLongerDeclared,
                              fmt::format("released; left in place: {}", *difference));
    ctx.change([&] {
      removeTree(host);
      syncDir(parentOf(host));
    });
    return Outcome::removed(reasons::kNoLongerDeclared, "deleted");
  }
};

}  // namespace

const Applier& archiveApplier() {
  static const ArchiveApplier a;
  return a;
}

}  // namespace mesh::apply
