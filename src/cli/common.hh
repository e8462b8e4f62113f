// What every command shares: the common options, how they resolve, and loading
// the declaration.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "apply/context.hh"
#include "decl/model.hh"
#include "decl/parse.hh"
#include "state/store/retention.hh"

namespace mesh::cli {

// mesh-host's version (CMakeLists.txt's project version), for --version and fleet status.
inline constexpr const char* kVersion = MESH_HOST_VERSION;

// Exit codes (the contract in the README and docs/json.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitPending = 3;

struct CommonOptions {
  std::string root = "/";
  std::string stateDir;  // default <root>/var/lib/mesh-host
  std::string blobs;     // default <state-dir>/blobs
  std::string supervisor = "auto";
  std::string unitDir = "/etc/systemd/system";
  std::string node;               // default the hostname
  bool nodeFromHostname = false;  // no --node: resolve() took the hostname
  bool json = false;
  bool verbose = false;
  // Operator keys whose signatures this node accepts: key texts or files holding
  // one; <state-dir>/trusted/*.pub are added (docs/trust.md).
  std::vector<std::string> trust;
  // How much of its past the state store keeps (kKeep).
  state::Retention retention;

  // Which of these options a command takes: its --help lists those only, and any
  // other is refused as an unknown option rather than silently ignored.
  enum Use : unsigned {
    kRoot = 1u << 0,
    kStateDir = 1u << 1,
    kBlobs = 1u << 2,
    kSupervisor = 1u << 3,
    kUnitDir = 1u << 4,
    kNode = 1u << 5,
    kJson = 1u << 6,
    kVerbose = 1u << 7,
    kTrust = 1u << 8,
    // The store's bounds (--keep-generations, --keep-cycles, --keep-days): apply,
    // rollback, run (each cycle trims to them) and gc (trims at once).
    kKeep = 1u << 9,
    // Reading this node's state store.
    kStore = kRoot | kStateDir | kNode | kJson,
    // Converging the node: apply, plan, rollback, run.
    kConverge = kStore | kBlobs | kSupervisor | kUnitDir | kVerbose | kTrust,
  };
  void addTo(CLI::App& cmd, unsigned uses = kConverge);
  // Fills the defaults that depend on other options; validates --root.
  void resolve();
  apply::Settings settings(bool plan) const;
  // Set by `rollback`: an absent no longer declared puts back what it removed.
  bool rollback = false;
  // What every parse on this node starts from: --node, and the state dir as a
  // declared path when it lies under --root (nothing may be declared in it).
  decl::ParseOptions parseOptions(std::string baseDir) const;
};

// Reads and validates the declaration; throws InputError. When this node trusts
// operator keys, the declaration must carry a trusted signature over its exact
// bytes, and a serial no lower than the highest this node applied (replay).
//
// With `compiled`, the declaration is first looked up there (decl/compiled.hh: not
// parsed again while its text, this binary and the options are the same); one it
// had to parse is noted there (state/compiled_cache.hh: the caller puts its form
// in the store once it holds the store for writing).
decl::Declaration loadDeclarationFor(const std::string& path, const CommonOptions& o,
                                     decl::CompiledCache* compiled = nullptr);

}  // namespace mesh::cli
