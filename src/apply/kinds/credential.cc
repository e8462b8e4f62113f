// `credential`: a secret file, 0600 unless told. Its content — a value sealed to
// this node's key, or a local `from` file — is read into a Secret, named only by a
// keyed digest of the plaintext, and never shown.
#include "apply/applier.hh"
#include "apply/kinds/content_file.hh"
#include "state/state_dir.hh"
#include "trust/node_key.hh"
#include "trust/sealed.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/secret.hh"

namespace mesh::apply {

namespace {

Attributes attributesOf(const decl::CredentialSpec& s) {
  return {s.mode, s.owner, s.group};
}

// A sealed value opens only with a key it was sealed to. A value of many recipients
// (trust/sealed.hh) tells "not sealed to this node" from "damaged"; one of a single
// recipient cannot (libsodium), so the message names both. Each names this node's key.
Secret openSealed(Context& ctx, const std::string& sealed) {
  const auto& key = ctx.nodeKey();
  auto opened = trust::openSealedWith(key, sealed);
  if (opened.secret) return std::move(*opened.secret);
  const auto& stateDir = ctx.settings().stateDir;
  if (ctx.planning() && !trust::NodeKey::load(stateDir))
    throw Error(
        "the sealed value cannot be opened: this node has no key yet ({}); "
        "`mesh-host apply` creates it — then seal the secret to it with "
        "`mesh-host seal --to <this node's key> FILE`",
        state::StateDir{stateDir}.nodeKey());
  const auto pub = key.publicKeyText();
  using R = trust::OpenedSealed::Result;
  switch (opened.result) {
    case R::NotARecipient:
      throw Error(
          "the sealed value cannot be opened: not sealed to this node's key (this node is {}; "
          "the value has {} recipient(s): sealed to another node's key, or damaged); seal it "
          "again with `mesh-host seal --to {} FILE`, with a --to for each other recipient too "
          "(or --nodes, this node enrolled)",
          pub, opened.recipients, pub);
    case R::Damaged:
      throw Error(
          "the sealed value cannot be opened: damaged — this node ({}) is one of its {} "
          "recipient(s) but the secret does not open (changed after sealing); seal it again",
          pub, opened.recipients);
    case R::Malformed:
      throw Error(
          "the sealed value is not one mesh-host seal printed (sealed:… or sealed:v2:N:…); "
          "seal it again with `mesh-host seal --to {} FILE`",
          pub);
    case R::NotForThisKey:
    case R::Opened:
      break;
  }
  throw Error(
      "the sealed value cannot be opened: sealed to another node's key or damaged "
      "(this node is {}); seal it again with `mesh-host seal --to {} FILE`",
      pub, pub);
}

Secret readSecret(Context& ctx, const decl::CredentialSpec& s) {
  if (s.sealed) return openSealed(ctx, *s.sealed);
  auto bytes = readFile(*s.from);
  if (!bytes) throw Error("credential source {} does not exist", *s.from);
  return Secret(std::move(*bytes));
}

class CredentialApplier : public Applier {
 public:
  Digest want(Context& ctx, const decl::Resource& r) const override {
    const auto& s = std::get<decl::CredentialSpec>(r.spec);
    WantBuilder w("credential/1");
    w.add("content", ctx.nodeKey().keyedDigest(readSecret(ctx, s)));
    addAttributes(w, attributesOf(s));
    return w.finish();
  }

  Decision reconcile(Step& step, const decl::Resource& r, const Digest& want,
                     const state::Record* rec) const override {
    Context& ctx = step.ctx();
    const auto& s = std::get<decl::CredentialSpec>(r.spec);
    const auto& key = ctx.nodeKey();
    // Read (or opened) once, so the bytes written are the bytes digested.
    const Secret secret = readSecret(ctx, s);
    WantedContent c;
    c.digest = key.keyedDigest(secret);
    c.digestOfFile = [&](int fd, const std::string& shown) {
      return keyedDigestOfFile(key, fd, shown);
    };
    c.withBytes = [&](const std::function<void(std::string_view)>& use) {
      use(secret.exposeForWrite());
    };
    c.secret = true;
    return reconcileContentFile(step, r, attributesOf(s), want, rec, c);
  }

  bool holdsWhatItWrote(Context& ctx, const state::Record& rec) const override {
    const auto& key = ctx.nodeKey();
    return contentFileAsWritten(ctx, rec, [&](int fd, const std::string& shown) {
      return keyedDigestOfFile(key, fd, shown);
    });
  }

  Removal remove(Step& step, const state::Record& rec) const override {
    Context& ctx = step.ctx();
    const auto& key = ctx.nodeKey();
    return removeContentFile(step, rec, [&](int fd, const std::string& shown) {
      return keyedDigestOfFile(key, fd, shown);
    });
  }

 private:
  static std::string keyedDigestOfFile(const trust::NodeKey& key, int fd,
                                       const std::string& shown) {
    return key.keyedDigest(Secret(readAll(fd, shown)));
  }
};

}  // namespace

const Applier& credentialApplier() {
  static const CredentialApplier a;
  return a;
}

}  // namespace mesh::apply
