#include "trust/operator_key.hh"

#include "trust/key_file.hh"
#include "trust/signing.hh"
#include "util/base64.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::trust {

namespace {
constexpr std::string_view kHeader = "mesh-host operator key v1\n";
constexpr std::string_view kPublicPrefix = "mesh-op:";
}  // namespace

std::string OperatorPublicKey::text() const {
  return std::string(kPublicPrefix) + base64Encode(bytes.data(), bytes.size());
}

OperatorPublicKey OperatorPublicKey::parse(std::string_view text, const std::string& where) {
  text = trimSpace(text);
  OperatorPublicKey key;
  if (!text.starts_with(kPublicPrefix) ||
      !base64Decode(text.substr(kPublicPrefix.size()), key.bytes.data(), key.bytes.size()))
    throw InputError(
        "{}: not an operator public key (expected mesh-op:<base64>, as `mesh-host key init "
        "--operator` or `mesh-host key show --operator` prints it)",
        where);
  return key;
}

void OperatorKey::derive() {
  crypto_sign_seed_keypair(public_.bytes.data(), secret_.data(), seed_.data());
}

OperatorKey OperatorKey::generate() {
  OperatorKey k;
  randombytes_buf(k.seed_.data(), k.seed_.size());
  k.derive();
  return k;
}

OperatorKey OperatorKey::load(const std::string& path) {
  std::optional<std::string> text;
  try {
    text = readKeyFile(path, KeyFileKind::Private);
  } catch (const SysError& e) {
    throw InputError("cannot read operator key {}: {}", path, e.what());
  }
  if (!text)
    throw InputError(
        "operator key {} does not exist; make one with mesh-host key init --operator {}", path,
        path);
  OperatorKey k;
  bool ok = text->starts_with(kHeader) &&
            base64Decode(trimSpace(std::string_view(*text).substr(kHeader.size())), k.seed_.data(),
                         k.seed_.size());
  sodium_memzero(text->data(), text->size());
  if (!ok)
    throw InputError("{} is not a mesh-host operator key (expected \"{}<base64>\")", path,
                     "mesh-host operator key v1\\n");
  k.derive();
  return k;
}

void OperatorKey::saveNew(const std::string& path) const {
  if (lstatPath(path))
    throw InputError(
        "{} already exists; an operator key is never overwritten — move it aside "
        "first, or use it",
        path);
  std::string text = std::string(kHeader) + base64Encode(seed_.data(), seed_.size()) + "\n";
  atomicWrite(path, text, 0600);
  sodium_memzero(text.data(), text.size());
}

OperatorKey::OperatorKey(OperatorKey&& o) noexcept
    : seed_(o.seed_), secret_(o.secret_), public_(o.public_) {
  sodium_memzero(o.seed_.data(), o.seed_.size());
  sodium_memzero(o.secret_.data(), o.secret_.size());
}

OperatorKey& OperatorKey::operator=(OperatorKey&& o) noexcept {
  if (this != &o) {
    seed_ = o.seed_;
    secret_ = o.secret_;
    public_ = o.public_;
    sodium_memzero(o.seed_.data(), o.seed_.size());
    sodium_memzero(o.secret_.data(), o.secret_.size());
  }
  return *this;
}

OperatorKey::~OperatorKey() {
  sodium_memzero(seed_.data(), seed_.size());
  sodium_memzero(secret_.data(), secret_.size());
}

std::array<unsigned char, crypto_sign_BYTES> OperatorKey::sign(std::string_view bytes) const {
  std::array<unsigned char, crypto_sign_BYTES> sig{};
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(bytes.data()),
                       bytes.size(), secret_.data());
  return sig;
}

}  // namespace mesh::trust
