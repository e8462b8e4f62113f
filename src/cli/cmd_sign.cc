// `mesh-host sign --key FILE DECL`: a detached signature over DECL's exact bytes,
// written to DECL.sig (docs/trust.md).
#include <cstdio>

#include "cli/commands.hh"
#include "cli/output.hh"
#include "trust/signing.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

void SignOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--key", key, "the operator key file (mesh-host key init --operator FILE)")
      ->option_text("FILE")
      ->required();
}

int runSign(const std::string& declPath, const SignOptions& s) {
  const auto key = trust::OperatorKey::load(s.key);
  std::optional<std::string> text;
  try {
    text = readFile(declPath);
  } catch (const SysError& e) {
    throw InputError("cannot read declaration {}: {}", declPath, e.what());
  }
  if (!text) throw InputError("declaration {} does not exist", declPath);
  const std::string sigPath = declPath + ".sig";
  atomicWrite(sigPath, trust::signatureText(key, *text), 0644);
  printLine(fmt::format("mesh-host: signed {} by {}", declPath, key.publicKey().text()), stderr);
  printLine(sigPath);
  return kExitOk;
}

}  // namespace mesh::cli
