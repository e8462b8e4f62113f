// `mesh-host key init|show`: the node's key pair (<state-dir>/node.key), or with
// --operator FILE an operator's signing key (docs/trust.md).
#include <sys/stat.h>

#include <cstdio>

#include "cli/commands.hh"
#include "cli/output.hh"
#include "state/state_dir.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

void KeyOptions::addTo(CLI::App& cmd) {
  cmd.add_option("ACTION", action, "init: create the key (kept when it exists); show: print it")
      ->check(CLI::IsMember({"init", "show"}))
      ->required();
  cmd.add_option("--operator", operatorKey,
                 "an operator signing key file instead of this node's key (init makes it, 0600)")
      ->option_text("FILE");
}

namespace {

int operatorKey(const KeyOptions& k) {
  if (k.action == "init") {
    auto key = trust::OperatorKey::generate();
    key.saveNew(k.operatorKey);
    printLine(key.publicKey().text());
    printLine(fmt::format("mesh-host: operator key written to {} (0600); nodes trust it with "
                          "--trust or a .pub file in <state-dir>/trusted/",
                          k.operatorKey),
              stderr);
  } else {
    printLine(trust::OperatorKey::load(k.operatorKey).publicKey().text());
  }
  return kExitOk;
}

}  // namespace

int runKey(CommonOptions& o, const KeyOptions& k) {
  if (!k.operatorKey.empty()) return operatorKey(k);
  o.resolve();
  if (k.action == "init") {
    const std::string path = state::StateDir{o.stateDir}.nodeKey();
    const bool existed = lstatPath(path).has_value();
    makeDirs(o.stateDir, 0750);
    auto key = trust::NodeKey::loadOrCreate(o.stateDir);
    printLine(key.publicKeyText());
    if (existed) printLine("mesh-host: " + path + " already existed; it was kept", stderr);
    return kExitOk;
  }
  auto key = trust::NodeKey::load(o.stateDir);
  if (!key)
    throw InputError("no node key at {} yet; create it with mesh-host key init",
                     state::StateDir{o.stateDir}.nodeKey());
  printLine(key->publicKeyText());
  return kExitOk;
}

}  // namespace mesh::cli
