#include "trust/signing.hh"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "trust/key_file.hh"
#include "util/base64.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/state_layout.hh"

namespace mesh::trust {

namespace {
constexpr std::string_view kSigPrefix = "mesh-sig:";

std::optional<std::string> readOrInputError(const std::string& path, std::string_view what) {
  try {
    return readFile(path);
  } catch (const SysError& e) {
    throw InputError("cannot read {} {}: {}", what, path, e.what());
  }
}

// A trusted public key file, checked like ssh checks its keys (fleet/key_file.hh).
std::optional<std::string> readTrustedKeyFile(const std::string& path) {
  try {
    return readKeyFile(path, KeyFileKind::Public);
  } catch (const SysError& e) {
    throw InputError("cannot read trusted key file {}: {}", path, e.what());
  }
}
}  // namespace

std::string_view trimSpace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::string signatureText(const OperatorKey& key, std::string_view bytes) {
  const auto sig = key.sign(bytes);
  const auto pub = key.publicKey().text();
  return std::string(kSigPrefix) + pub.substr(pub.find(':') + 1) + ":" +
         base64Encode(sig.data(), sig.size()) + "\n";
}

DetachedSignature parseSignature(std::string_view text, const std::string& where) {
  text = trimSpace(text);
  DetachedSignature out;
  const auto colon = text.find(':', kSigPrefix.size());
  bool ok = text.starts_with(kSigPrefix) && colon != std::string_view::npos &&
            base64Decode(text.substr(kSigPrefix.size(), colon - kSigPrefix.size()),
                         out.signer.bytes.data(), out.signer.bytes.size()) &&
            base64Decode(text.substr(colon + 1), out.signature.data(), out.signature.size());
  if (!ok)
    throw InputError(
        "{}: not a mesh-host signature (expected mesh-sig:<base64 key>:<base64 signature>); "
        "sign the declaration again with mesh-host sign",
        where);
  return out;
}

bool signatureMatches(const DetachedSignature& sig, std::string_view bytes) {
  return crypto_sign_verify_detached(sig.signature.data(),
                                     reinterpret_cast<const unsigned char*>(bytes.data()),
                                     bytes.size(), sig.signer.bytes.data()) == 0;
}

std::vector<OperatorPublicKey> loadTrustedKeys(const std::vector<std::string>& trustOptions,
                                               const std::string& stateDir) {
  std::vector<OperatorPublicKey> keys;
  auto add = [&keys](const OperatorPublicKey& k) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  };
  for (const auto& value : trustOptions) {
    if (trimSpace(value).starts_with("mesh-op:")) {
      add(OperatorPublicKey::parse(value, "--trust " + value));
      continue;
    }
    auto text = readTrustedKeyFile(value);
    if (!text)
      throw InputError("--trust {}: neither a key (mesh-op:<base64>) nor an existing file", value);
    add(OperatorPublicKey::parse(*text, "--trust " + value));
  }
  const std::string dir = layout::under(stateDir, layout::kTrusted);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return keys;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".pub") files.push_back(entry.path().string());
  if (ec) throw InputError("cannot list {}: {}", dir, ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    auto text = readTrustedKeyFile(file);
    if (text) add(OperatorPublicKey::parse(*text, file));
  }
  return keys;
}

std::optional<OperatorPublicKey> verifyDeclaration(const std::string& path, std::string_view text,
                                                   const std::vector<OperatorPublicKey>& trusted) {
  if (trusted.empty()) return std::nullopt;
  const std::string sigPath = path + ".sig";
  auto sigText = readOrInputError(sigPath, "signature");
  if (!sigText)
    throw InputError(
        "declaration {} is not signed (no {}) but this node trusts operator keys; sign it with "
        "mesh-host sign --key KEY {}",
        path, sigPath, path);
  return verifySignedText(path, text, *sigText, sigPath, trusted);
}

OperatorPublicKey verifySignedText(const std::string& where, std::string_view text,
                                   std::string_view sigText, const std::string& sigWhere,
                                   const std::vector<OperatorPublicKey>& trusted) {
  if (trimSpace(sigText).empty())
    throw InputError(
        "declaration {} is not signed but this node trusts operator keys; sign it with "
        "mesh-host sign (or push it with mesh-host fleet push --key KEY)",
        where);
  const auto sig = parseSignature(sigText, sigWhere);
  if (std::find(trusted.begin(), trusted.end(), sig.signer) == trusted.end())
    throw InputError(
        "declaration {} is signed by {} which this node does not trust; sign it with a trusted "
        "key, or trust that key (--trust, or a .pub file in <state-dir>/trusted/)",
        where, sig.signer.text());
  if (!signatureMatches(sig, text))
    throw InputError(
        "signature of declaration {} does not match its content (tampered?); check it and "
        "sign it again",
        where);
  return sig.signer;
}

}  // namespace mesh::trust
