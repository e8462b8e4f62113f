// `archive`: a bundle unpacked at `path`. One resource whose digest is the
// bundle's: unchanged while the unpacked tree is exactly as the bundle says
// (files edited, deleted or added inside it are drift). A new version is unpacked
// beside the old one and switched in with one atomic rename, so the tree is never
// seen half-unpacked.
#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "apply/applier.hh"
#include "bundle/unpack.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

using json = nlohmann::json;

bundle::Limits limitsOf(const decl::ArchiveSpec& s) { return {s.maxEntries, s.maxBytes}; }

// What the record remembers: the manifest of the tree written and the stat
// fingerprints of its files when last verified.
struct ArchiveObserved {
  std::optional<bundle::Manifest> manifest;
  bundle::VerifyCache cache;

  std::string str() const {
    if (!manifest) return {};
    json fp = json::array();
    for (const auto& [path, f] : cache.fingerprints) fp.push_back({path, f});
    return json{{"manifest", manifest->str()}, {"fingerprints", fp}}.dump();
  }

  static ArchiveObserved parse(const std::string& text) {
    ArchiveObserved o;
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("manifest")) return o;
    try {
      o.manifest = bundle::Manifest::parse(j.at("manifest").get<std::string>());
      for (const auto& e : j.at("fingerprints"))
        o.cache.fingerprints.emplace_back(e.at(0).get<std::string>(), e.at(1).get<std::string>());
    } catch (const json::exception&) {
      return {};
    }
    return o;
  }
};

// Leftovers of an unpack that a crash interrupted: ".<name>.mesh-*" beside path.
void removeLeftovers(const std::string& host) {
  const std::string dir = parentOf(host);
  const std::string prefix = "." + baseName(host) + ".mesh-";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (auto* e = ::readdir(d))
    if (std::string_view(e->d_name).substr(0, prefix.size()) == prefix)
      stale.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const auto& p : stale) removeTree(p);
}

// Unpacks the bundle beside `host` and switches it in; returns its manifest.
bundle::Manifest unpackAndSwitch(const std::string& blob, const std::string& host,
                                 const bundle::Limits& limits, bool replacing) {
  makeDirs(parentOf(host));
  removeLeftovers(host);
  const std::string fresh =
      fmt::format("{}/.{}.mesh-new.{:08x}", parentOf(host), baseName(host), randombytes_random());
  auto manifest = bundle::unpack(blob, fresh, limits);
  if (replacing) {
    // Atomic swap of two directories: no moment without a complete tree at host.
    if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, host.c_str(), RENAME_EXCHANGE) != 0) {
      int err = errno;
      removeTree(fresh);
      throw SysError(err, fmt::format("cannot switch {} to the new tree", host));
    }
    syncDir(parentOf(host));
    removeTree(fresh);  // now the old tree
  } else {
    if (::rename(fresh.c_str(), host.c_str()) != 0) {
      int err = errno;
      removeTree(fresh);
      throw SysError(err, fmt::format("cannot move the new tree to {}", host));
    }
    syncDir(parentOf(host));
  }
  return manifest;
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
      ArchiveObserved prev;
      if (rec && rec->wrote == want.str()) prev = ArchiveObserved::parse(rec->observed);
      if (!prev.manifest) prev = {bundle::readManifest(ctx.blobs().fetch(s.bundle), limits), {}};
      ArchiveObserved now{prev.manifest, {}};
      auto difference = bundle::verify(host, *prev.manifest, &prev.cache, &now.cache);
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
    ArchiveObserved now;
    if (ctx.applying())
      now.manifest = unpackAndSwitch(blob, host, limits, st.has_value());
    else
      now.manifest = bundle::readManifest(blob, limits);
    const std::string detail = fmt::format("{} file(s) from {}", now.manifest->files(),
                                           s.bundle.shortStr());
    Outcome o = st ? Outcome::updated(want, reason, detail) : Outcome::created(want, reason, detail);
    o.observed = now.str();
    return o;
  }

  Outcome remove(Context& ctx, const state::Record& rec) const override {
    const std::string host = ctx.hostPath(rec.path);
    const auto st = lstatPath(host);
    if (!st) return Outcome::removed(reasons::kNoLongerDeclared, "already gone");
    auto prev = ArchiveObserved::parse(rec.observed);
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
