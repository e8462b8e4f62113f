// `credential`: a secret file, 0600 unless told. Its content is read into a
// Secret, named only by a keyed digest, and never shown.
#include "apply/applier.hh"
#include "apply/kinds/content_file.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/secret.hh"

namespace mesh::apply {

namespace {

Attributes attributesOf(const decl::CredentialSpec& s) {
  return {s.mode, s.owner, s.group};
}

Secret readSecret(const decl::CredentialSpec& s) {
  if (s.sealed)
    throw Error("sealed credentials are not supported by this build yet; use `from` for now");
  auto bytes = readFile(*s.from);
  if (!bytes) throw Error("credential source {} does not exist", *s.from);
  return Secret(std::move(*bytes));
}

class CredentialApplier : public Applier {
 public:
  Digest want(Context& ctx, const decl::Resource& r) const override {
    const auto& s = std::get<decl::CredentialSpec>(r.spec);
    WantBuilder w("credential/1");
    w.add("content", ctx.nodeKey().keyedDigest(readSecret(s)));
    addAttributes(w, attributesOf(s));
    return w.finish();
  }

  Outcome reconcile(Context& ctx, const decl::Resource& r, const Digest& want,
                    const state::Record* rec) const override {
    const auto& s = std::get<decl::CredentialSpec>(r.spec);
    const auto& key = ctx.nodeKey();
    WantedContent c;
    c.digest = key.keyedDigest(readSecret(s));
    c.digestOfFile = [&](const std::string& path) { return keyedDigestOfFile(key, path); };
    c.withBytes = [&](const std::function<void(std::string_view)>& use) {
      Secret secret = readSecret(s);
      use(secret.exposeForWrite());
    };
    c.secret = true;
    return reconcileContentFile(ctx, s.path, attributesOf(s), want, rec, c);
  }

  Outcome remove(Context& ctx, const state::Record& rec) const override {
    const auto& key = ctx.nodeKey();
    return removeContentFile(ctx, rec,
                             [&](const std::string& path) { return keyedDigestOfFile(key, path); });
  }

 private:
  static std::string keyedDigestOfFile(const fleet::NodeKey& key, const std::string& path) {
    auto bytes = readFile(path);
    return key.keyedDigest(Secret(bytes.value_or("")));
  }
};

}  // namespace

const Applier& credentialApplier() {
  static const CredentialApplier a;
  return a;
}

}  // namespace mesh::apply
