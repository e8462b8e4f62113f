// `mesh-host seal --to KEY [--to KEY …] FILE` and `mesh-host seal --etcd URL --trust KEY
// --nodes LIST FILE`: seals a secret to every recipient's public key at once
// (trust/sealed.hh) and prints the one value for a credential's `sealed = "…"`. The
// secret goes from the file (or stdin) into a Secret and out only as ciphertext; it
// is never echoed. With --nodes, the keys are the enrolled ones (fleet/recipients.hh).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hh"
#include "cli/output.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "fleet/recipients.hh"
#include "fleet/statement.hh"
#include "trust/sealed.hh"
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

// The keys --nodes names in etcd: every enrolled node it matches, checked.
std::vector<std::string> keysOfNodes(const SealOptions& s) {
  if (s.etcd.empty()) throw InputError("seal --nodes: give --etcd URL, where the nodes enroll");
  fleet::checkFleetName(s.cluster, "--cluster");
  fleet::Selector selector;
  for (const auto& v : s.nodes) selector.add(v, "--nodes");
  const auto trusted = s.trust.load();
  auto config = s.connection.config(etcdEndpoints(s.etcd));
  fleet::EtcdClient client(config);
  const auto chosen =
      fleet::enrolledRecipients(client, fleet::FleetKeys{s.cluster}, selector, trusted);
  std::vector<std::string> keys, names;
  for (const auto& r : chosen.nodes) {
    keys.push_back(r.key.text());
    names.push_back(r.node);
  }
  if (chosen.invalidNames > 0)
    printLine(fmt::format("mesh-host: seal: --nodes: skipped {} name(s) under {} that are not "
                          "node names (written outside mesh-host?)",
                          chosen.invalidNames, fleet::FleetKeys{s.cluster}.nodesPrefix()),
              stderr);
  if (!chosen.skipped.empty())
    printLine(fmt::format("mesh-host: seal: {} matched node(s) not enrolled, not recipients: {}",
                          chosen.skipped.size(), fmt::join(chosen.skipped, ", ")),
              stderr);
  printLine(fmt::format("mesh-host: seal: {} enrolled node(s) in cluster {}: {}", names.size(),
                        s.cluster, fmt::join(names, ", ")),
            stderr);
  return keys;
}

}  // namespace

void SealOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--to", to,
                 "a recipient node's public key, mesh-node:<base64> (mesh-host key show); "
                 "repeatable: one value every recipient opens with its own key")
      ->type_name("KEY")
      ->allow_extra_args(false);
  cmd.add_option("--nodes", nodes,
                 "comma-separated node names and globs (web-*): seal to every enrolled node of "
                 "--cluster they match, each with the key its enrollment holds (needs --etcd and "
                 "--trust)")
      ->option_text("LIST")
      ->allow_extra_args(false);
  addEtcdOption(cmd, etcd, "with --nodes, the etcd the nodes enroll in");
  cmd.add_option("--cluster", cluster, "with --nodes: the cluster (default default)")
      ->option_text("NAME")
      ->default_str("default");
  connection.addTo(cmd);
  trust.addTo(cmd);
  cmd.add_option("FILE", file, "the file holding the secret; - for stdin")->required();
}

int runSeal(const SealOptions& s) {
  if (s.to.empty() && s.nodes.empty())
    throw InputError(
        "seal: name the recipients with --to KEY (repeatable) or --etcd URL --nodes LIST");
  if (s.nodes.empty() && !s.etcd.empty())
    throw InputError("seal: --etcd is for --nodes; give --nodes LIST too, or leave --etcd out");
  const Secret secret = readSecretFile(s.file);
  if (secret.size() == 0) throw InputError("{} is empty; there is no secret to seal", s.file);
  std::vector<std::string> keys = s.to;
  if (!s.nodes.empty()) {
    // A node given by --to as well is one recipient.
    std::vector<std::vector<unsigned char>> given;
    for (const auto& k : s.to) given.push_back(trust::sealingKeyOf(k));
    for (auto& k : keysOfNodes(s))
      if (std::find(given.begin(), given.end(), trust::sealingKeyOf(k)) == given.end())
        keys.push_back(std::move(k));
  }
  const std::string sealed = trust::sealToMany(secret, keys);
  std::printf("%s\n", sealed.c_str());
  return kExitOk;
}

}  // namespace mesh::cli
