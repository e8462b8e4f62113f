// `archive`: a bundle unpacked at `path`. One resource whose digest is the
// bundle's: unchanged while the unpacked tree is exactly as the bundle says
// (files edited, deleted or added inside it are drift). A new version is unpacked
// beside the old one and switched in with one atomic rename, so the tree is never
// seen half-unpacked. Everything goes through the descriptor of the directory
// holding `path` (Context::place): a link planted on the way is refused.
//
// Adopting: a tree at `path` that this resource has no record of writing may hold
// files that are not the bundle's. Replacing the tree would delete them, so the
// resource fails naming them unless the declaration says `replace = true`. The
// tree replaced is kept first (apply/originals.hh), to be put back when the
// archive leaves the declaration; one above the bound (kTreeKeepBytes) is not
// kept, and replacing it needs `replace = true` even when it holds only the
// bundle's files: nothing will be given back.
#include <fcntl.h>
#include <unistd.h>

#include "apply/applier.hh"
#include "apply/kinds/tree.hh"
#include "apply/originals.hh"
#include "decl/want.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

bundle::Limits limitsOf(const decl::ArchiveSpec& s) {
  return {s.maxEntries, s.maxBytes, s.keepModes};
}

constexpr size_t kNamedInText = 5;    // foreign files named in a reason or detail
constexpr size_t kNamedInDiff = 100;  // … and listed in a plan's diff

// The record says this resource wrote the tree at `path`: it remembers a manifest
// of what it unpacked there.
bool wroteTree(const state::Record* rec, const std::string& path) {
  return rec && !rec->wrote.empty() && rec->path == path &&
         TreeObserved::parse(rec->observed).manifest.has_value();
}

// "a.conf, b/c, …"
std::string firstNames(const bundle::Unlisted& u) {
  std::string out;
  for (size_t i = 0; i < u.first.size() && i < kNamedInText; ++i)
    out += (out.empty() ? "" : ", ") + u.first[i];
  if (u.count > std::min(u.first.size(), kNamedInText)) out += ", …";
  return out;
}

// What a plan shows of the files replace = true would delete.
std::string deletionDiff(const bundle::Unlisted& u, const std::string& path) {
  std::string out =
      fmt::format("{} file(s) mesh-host did not write, deleted by replace = true:\n", u.count);
  for (const auto& f : u.first) out += fmt::format("- {}/{}\n", path, f);
  if (u.count > u.first.size()) out += fmt::format("  … and {} more\n", u.count - u.first.size());
  return out;
}

class ArchiveApplier : public Applier {
 public:
  // Of the spec alone: kept in the compiled form (decl/want.hh).
  Digest want(Context&, const decl::Resource& r) const override { return decl::wantOf(r); }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest& want,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::ArchiveSpec>(r.spec);
    const auto place = ctx.place(s.path);
    const auto st = ctx.look(place);
    const auto limits = limitsOf(s);

    std::string drift = "deleted";
    bundle::Unlisted foreign;  // what replacing a tree mesh-host did not write deletes
    bool keepFirst = false;    // a tree mesh-host did not write: kept before it is replaced
    if (st && S_ISDIR(st->st_mode)) {
      TreeObserved prev;
      if (rec && rec->wrote == want.str()) prev = TreeObserved::parse(rec->observed);
      auto [difference, now, sameAsPrev] = checkTree(ctx, place, s.bundle, limits, std::move(prev));
      if (!difference) {
        Decision o = Decision::unchanged();
        if (sameAsPrev)
          o.observedAsRecorded = true;  // not written out again: the record says it
        else
          o.observed = now.str();
        return o;
      }
      drift = *difference;
      if (!wroteTree(rec, s.path)) {
        if (!now.manifest) now.manifest = bundle::readManifest(ctx.blobs().fetch(s.bundle), limits);
        if (const auto tree = openTree(place))
          foreign = bundle::unlisted(tree->get(), *now.manifest, kNamedInDiff, s.path);
        if (foreign.count > 0 && !s.replace)
          throw Error(
              "{} holds {} file(s) mesh-host did not write: {}; declare replace = true to let "
              "mesh-host delete them, or move them away",
              s.path, foreign.count, firstNames(foreign));
        keepFirst = true;
        const auto tree = openTree(place);
        if (tree && !treeWithinKeepBound(tree->get(), s.path) && !s.replace)
          throw Error(
              "{} holds a tree mesh-host did not write, larger than it keeps to give back ({} "
              "MiB or {} entries); declare replace = true to replace it all the same (nothing "
              "will be given back when the archive leaves the declaration), or move it away",
              s.path, kTreeKeepBytes >> 20, kTreeKeepEntries);
      }
    } else if (st) {
      throw InTheWay("a {} is in the way at {}; remove it or declare another path",
                     S_ISLNK(st->st_mode) ? "symbolic link" : "file", s.path);
    }

    const std::string blob = ctx.blobs().fetch(s.bundle);
    TreeObserved now;
    std::string kept;
    step.change([&] {
      if (keepFirst) {
        const Original o = ctx.originals().keep(r, place, *st, Originals::Depth::Tree);
        kept = o.restorable() ? "; kept what was there"
                              : "; what was there not kept: too large, nothing will be given back";
      }
      // Parents made here go again when the unpack fails: a refused bundle leaves
      // no trace outside its path.
      std::vector<std::string> created;
      const auto at = ctx.makePlace(s.path, &created);
      try {
        now.manifest = unpackAndSwitch(ctx, blob, at, limits);
      } catch (...) {
        ctx.removeCreated(created);
        throw;
      }
    });
    if (!now.manifest) now.manifest = bundle::readManifest(blob, limits);  // a plan
    std::string detail =
        fmt::format("{} file(s) from {}", now.manifest->files(), s.bundle.shortStr());
    if (foreign.count > 0)
      detail += fmt::format("; {} {} file(s) mesh-host did not write (replace = true): {}",
                            ctx.planning() ? "would delete" : "deleted", foreign.count,
                            firstNames(foreign));
    detail += kept;
    Decision o = Decision::act(st.has_value(), drift, detail);
    o.observed = now.str();
    if (ctx.planning() && foreign.count > 0) o.diff = deletionDiff(foreign, s.path);
    return o;
  }

  bool holdsWhatItWrote(Context& ctx, const state::Record& rec) const override {
    const auto place = ctx.place(rec.path);
    const auto st = ctx.look(place);
    if (!st) return true;
    auto prev = TreeObserved::parse(rec.observed);
    const auto tree = S_ISDIR(st->st_mode) ? openTree(place) : std::nullopt;
    return tree && prev.manifest &&
           !bundle::verify(tree->get(), *prev.manifest, &prev.cache, rec.path).difference;
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    Context& ctx = step.ctx();
    const auto place = ctx.place(rec.path);
    const auto st = ctx.look(place);
    if (!st) return Removal::removed("already gone");
    auto prev = TreeObserved::parse(rec.observed);
    const auto tree = S_ISDIR(st->st_mode) ? openTree(place) : std::nullopt;
    if (!tree || !prev.manifest)
      return Removal::released("left in place: not the tree mesh-host wrote");
    if (auto difference =
            bundle::verify(tree->get(), *prev.manifest, &prev.cache, rec.path).difference)
      return Removal::released(fmt::format("left in place: {}", *difference));
    step.change([&] {
      removeTreeAt(place.dir, place.name, rec.path);
      syncFd(place.dir, rec.path);
      ctx.forgetDirs();  // last: `place.dir` is one the context holds
    });
    return Removal::removed(ctx.planning() ? "would delete" : "deleted");
  }
};

}  // namespace

const Applier& archiveApplier() {
  static const ArchiveApplier a;
  return a;
}

}  // namespace mesh::apply
