#include "cli/common.hh"

#include <unistd.h>

#include <filesystem>

#include "blob/http_source.hh"
#include "cli/time_text.hh"
#include "decl/parse.hh"
#include "state/store.hh"
#include "trust/replay.hh"
#include "trust/signing.hh"
#include "util/accounts.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

void CommonOptions::addTo(CLI::App& cmd, unsigned uses) {
  if (uses & kRoot)
    cmd.add_option("--root", root,
                   "every absolute path of the declaration lives under DIR (default /)")
        ->option_text("DIR")
        ->default_str("/");
  if (uses & kStateDir)
    cmd.add_option("--state-dir", stateDir,
                   "the state store's directory (default <root>/var/lib/mesh-host)")
        ->option_text("DIR")
        ->default_str("<root>/var/lib/mesh-host");
  if (uses & kBlobs)
    cmd.add_option("--blobs", blobs,
                   "a directory or http(s) URL holding bundles by digest (sha256/<hex>); default "
                   "<state-dir>/blobs")
        ->option_text("SRC")
        ->default_str("<state-dir>/blobs");
  if (uses & kSupervisor)
    cmd.add_option(
           "--supervisor", supervisor,
           "process supervisor backend (default auto: systemd when it is PID 1, else builtin)")
        ->check(CLI::IsMember({"auto", "builtin", "systemd"}))
        ->default_str("auto");
  if (uses & kUnitDir)
    cmd.add_option("--unit-dir", unitDir,
                   "where the systemd backend installs unit files (default /etc/systemd/system)")
        ->option_text("DIR")
        ->default_str("/etc/systemd/system");
  if (uses & kNode)
    cmd.add_option("--node", node, "this node's name (default the hostname)")
        ->option_text("NAME")
        ->default_str("hostname");
  if (uses & kJson) cmd.add_flag("--json", json, "machine-readable output on stdout");
  if (uses & kVerbose)
    cmd.add_flag("-v,--verbose", verbose, "show every resource, unchanged ones too");
  if (uses & kTrust)
    cmd.add_option("--trust", trust,
                   "an operator key (mesh-op:…, or a file holding one) whose signed declarations "
                   "this node accepts; repeatable; <state-dir>/trusted/*.pub too")
        ->option_text("KEY");
  if (uses & kKeep) {
    cmd.add_option("--keep-generations", retention.keepGenerations,
                   "the state store keeps the last N declaration generations (older ones, and "
                   "their texts, are trimmed; never the current one or one rollback needs)")
        ->check(CLI::PositiveNumber)
        ->option_text("N")
        ->default_str(std::to_string(state::Retention{}.keepGenerations));
    cmd.add_option("--keep-cycles", retention.keepCycles,
                   "the state store keeps the last N cycles and their outcomes")
        ->check(CLI::PositiveNumber)
        ->option_text("N")
        ->default_str(std::to_string(state::Retention{}.keepCycles));
    cmd.add_option("--keep-days", retention.keepDays,
                   fmt::format("cycles and generations older than D days are trimmed too (but "
                               "never the last {} cycles, nor the last {} generations)",
                               state::Retention{}.minCycles, state::Retention{}.minGenerations))
        ->check(CLI::PositiveNumber)
        ->option_text("D")
        ->default_str(std::to_string(state::Retention{}.keepDays));
  }
}

void CommonOptions::resolve() {
  std::error_code ec;
  auto abs = std::filesystem::absolute(root, ec);
  if (ec) throw InputError("--root {}: {}", root, ec.message());
  root = abs.lexically_normal().string();
  if (root.size() > 1 && root.back() == '/') root.pop_back();
  auto st = lstatPath(root);
  if (!st || !S_ISDIR(st->st_mode))
    throw InputError("--root {}: not a directory; create it first", root);
  if (stateDir.empty()) stateDir = (root == "/" ? "" : root) + "/var/lib/mesh-host";
  stateDir = std::filesystem::absolute(stateDir).lexically_normal().string();
  if (blobs.empty()) blobs = state::StateDir{stateDir}.blobs();
  if (node.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) throwSys("cannot read the hostname");
    node = host;
    nodeFromHostname = true;
  }
}

apply::Settings CommonOptions::settings(bool plan) const {
  apply::Settings s;
  s.root = root;
  s.stateDir = stateDir;
  s.blobs = blobs;
  s.openBlobs = blob::openBlobSource;
  s.node = node;
  s.plan = plan;
  s.rollback = rollback;
  s.supervisor = supervisor;
  s.unitDir = unitDir;
  s.retention = retention;
  return s;
}

decl::ParseOptions CommonOptions::parseOptions(std::string baseDir) const {
  decl::ParseOptions po;
  po.node = node;
  po.baseDir = std::move(baseDir);
  if (root == "/")
    po.stateDir = stateDir;
  else if (stateDir.starts_with(root + "/"))
    po.stateDir = stateDir.substr(root.size());
  // Under a root holding its own etc/passwd, names resolve there (util/accounts.hh).
  if (Accounts accounts(root); accounts.inFiles()) {
    po.userExists = [accounts](const std::string& n) { return accounts.uid(n).has_value(); };
    po.groupExists = [accounts](const std::string& n) { return accounts.gid(n).has_value(); };
  }
  return po;
}

namespace {

// Replay: a signed declaration older than one this node applied is refused;
// `rollback` (which does not come through here) is the way back on purpose.
void checkSerial(const decl::Declaration& d, const std::string& path, const CommonOptions& o) {
  auto store = state::Store::openIfExists(o.stateDir);
  if (!store) return;  // nothing applied yet
  const auto applied = store->highestSerial();
  if (!applied) return;
  // No digest: `apply` takes the applied serial again with any content.
  switch (trust::judgeReplay(d.serial, "", {applied->serial, ""})) {
    case trust::Replay::Newer:
    case trust::Replay::Same:
    case trust::Replay::Conflict:  // not without a digest
      return;
    case trust::Replay::Unserialed:
      throw InputError(
          "declaration {} has no serial but serial {} was applied on {} (generation {}); add "
          "serial = {} or more and sign it again",
          path, applied->serial, isoTime(applied->lastAppliedAt), applied->generation,
          applied->serial + 1);
    case trust::Replay::Older:
      throw InputError(
          "declaration {}: serial {} is older than serial {} applied on {} (generation {}); a "
          "replayed declaration is refused; use mesh-host rollback to go back on purpose",
          path, *d.serial, applied->serial, isoTime(applied->lastAppliedAt), applied->generation);
  }
}

}  // namespace

decl::Declaration loadDeclarationFor(const std::string& path, const CommonOptions& o,
                                     decl::CompiledCache* compiled) {
  auto po = o.parseOptions(std::filesystem::absolute(parentOf(path)).lexically_normal().string());
  const auto trusted = trust::loadTrustedKeys(o.trust, o.stateDir);
  po.checkText = [&trusted](const std::string& file, std::string_view text) {
    trust::verifyDeclaration(file, text, trusted);
  };
  po.compiled = compiled;
  auto declaration = decl::loadDeclaration(path, po);
  if (!trusted.empty()) checkSerial(declaration, path, o);
  return declaration;
}

}  // namespace mesh::cli
