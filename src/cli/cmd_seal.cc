// `mesh-host seal --to NODE_PUBKEY FILE`: seals a secret to one node's public key
// and prints the value for a credential's `sealed = "…"`. The secret goes from the
// file (or stdin) into a Secret and out only as ciphertext; it is never echoed.
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "cli/commands.hh"
#include "trust/node_key.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/secret.hh"

namespace mesh::cli {

namespace {

Secret readStdin() {
  std::string bytes;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      sodium_memzero(buf, sizeof buf);
      throwSys("cannot read the secret from stdin");
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
  sodium_memzero(buf, sizeof buf);
  return Secret(std::move(bytes));
}

Secret readSecretFile(const std::string& path) {
  if (path == "-") return readStdin();
  auto bytes = readFile(path);
  if (!bytes)
    throw InputError("{} does not exist; name the file that holds the secret, or - for stdin",
                     path);
  return Secret(std::move(*bytes));
}

}  // namespace

void SealOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--to", to, "the node's public key, mesh-node:<base64> (mesh-host key show)")
      ->type_name("KEY")
      ->required();
  cmd.add_option("FILE", file, "the file holding the secret; - for stdin")->required();
}

int runSeal(const SealOptions& s) {
  const Secret secret = readSecretFile(s.file);
  if (secret.size() == 0) throw InputError("{} is empty; there is no secret to seal", s.file);
  const std::string sealed = trust::NodeKey::seal(secret, s.to);
  std::printf("%s\n", sealed.c_str());
  return kExitOk;
}

}  // namespace mesh::cli
