// `file`: one regular file with inline `content` or a `blob` from the blob source.
#include "apply/applier.hh"
#include "apply/kinds/content_file.hh"
#include "decl/want.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::apply {

namespace {

Attributes attributesOf(const decl::FileSpec& s) {
  return {s.mode, s.owner, s.group};
}

std::string sha256OfFile(int fd, const std::string& shown) {
  return Digest::ofFd(fd, shown).str();
}

class FileApplier : public Applier {
 public:
  // Of the spec alone: kept in the compiled form (decl/want.hh).
  Digest want(Context&, const decl::Resource& r) const override { return decl::wantOf(r); }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest& want,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::FileSpec>(r.spec);
    WantedContent c;
    c.digest = s.contentDigest.str();
    c.digestOfFile = sha256OfFile;
    c.withBytes = [&](const std::function<void(std::string_view)>& use) {
      if (!s.blob) return use(s.content.value_or(""));
      auto path = ctx.blobs().fetch(*s.blob);
      auto bytes = readFile(path);
      if (!bytes) throw Error("blob {} vanished from {}", s.blob->str(), path);
      if (Digest::ofBytes(*bytes) != *s.blob)
        throw Error("blob {} changed while being read from {}", s.blob->str(), path);
      use(*bytes);
    };
    return reconcileContentFile(step, r, attributesOf(s), want, rec, c);
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    return removeContentFile(step, rec, sha256OfFile);
  }

  bool holdsWhatItWrote(Context& ctx, const state::Record& rec) const override {
    return contentFileAsWritten(ctx, rec, sha256OfFile);
  }
};

}  // namespace

const Applier& fileApplier() {
  static const FileApplier a;
  return a;
}

}  // namespace mesh::apply
