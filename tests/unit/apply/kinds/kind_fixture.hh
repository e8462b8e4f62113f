// One applier on its own, on a real temp tree: what the cycle does around one
// resource, and no more — its want, its reconcile through a fresh Context (plan
// mode: the closed gate), the staged writes committed, the outcome built — so a
// test sees what the kind observes and decides, and what it leaves on disk.
//
// What makes an applier awkward to call alone (and what this fixture stands in
// for):
//   - files and credentials only *stage* their write (Context::stageWrite); it is
//     the cycle that commits the batch and, from what committed, fills the
//     outcome's `observed` or fails it (commitStaged): converge() does both;
//   - the Outcome is built by the cycle from the kind's Decision, the want and the
//     record (Outcome::of), and the record the next cycle is given is the cycle's
//     too (nextRecord in cycle/): recordOf() builds the fields a kind reads;
//   - a resource's Step (apply/step.hh) carries a process's restart causes, its
//     before-first-change hook, oweOwnRestart and claimInstall: here a step with
//     `causes` and no hooks;
//   - the supervisor comes from Settings::makeSupervisor (test-only).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../../support/temp_dir.hh"
#include "apply/applier.hh"
#include "apply/outcome.hh"
#include "decl/model.hh"
#include "recording_supervisor.hh"
#include "state/store.hh"

namespace mesh::apply::test {

// What proves a path was not written: its inode, mtime, ctime, mode and owner.
struct Stamp {
  ino_t ino = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  mode_t mode = 0;
  uid_t uid = 0;
  bool operator==(const Stamp&) const = default;
};
void PrintTo(const Stamp& s, std::ostream* os);

enum class Mode { Apply, Plan };

class KindTest : public ::testing::Test {
 protected:
  // `toml` (one resource) parsed as the CLI parses a declaration for this node; the
  // resource, kept for the test.
  const decl::Resource& declare(const std::string& toml);

  // One converge of `r`, as the cycle makes it. `rec`: the record of the last
  // converge (nullptr: none, the first time or a lost store).
  Outcome converge(const decl::Resource& r, const state::Record* rec = nullptr,
                   Mode mode = Mode::Apply);
  // The record the cycle keeps of `o` (the fields a kind reads back).
  static state::Record recordOf(const decl::Resource& r, const Outcome& o,
                                const state::Record* before = nullptr);
  // Converges `r` once with no record and returns the record kept: "it was applied".
  state::Record applied(const decl::Resource& r);

  // The first rule, for any kind: `r` applied once and converged again with its
  // record is `unchanged`, with no reason, holds its want, and touches no path.
  void expectAsRecordedIsUnchangedAndUntouched(const decl::Resource& r);

  // The digest the cycle attaches to `r` (what Applier::want says).
  Digest wantOf(const decl::Resource& r, Mode mode = Mode::Apply);

  // Paths on the node, beneath the root.
  std::string at(const std::string& declared) const { return root + declared; }
  std::string read(const std::string& declared) const;
  void write(const std::string& declared, const std::string& content) const;
  std::optional<Stamp> stampOf(const std::string& declared) const;
  // Every path under the root (links not followed), with its stamp.
  std::map<std::string, Stamp> tree() const;
  static std::vector<std::string> pathsOf(const std::map<std::string, Stamp>& t);

  // Puts `bytes` in the blob directory by digest; "sha256:<hex>".
  std::string publish(const std::string& bytes) const;
  // A tar of `files` (path → content) made by the real tar, published; its digest.
  std::string publishTar(const std::map<std::string, std::string>& files);

  mesh::test::TempDir tmp{"mesh-kind-test"};
  std::string work = tmp.path;
  std::string root = work + "/root";
  std::string stateDir = root + "/var/lib/mesh-host";
  std::string blobs = work + "/blobs";
  // Set by the process tests: the services the supervisor acts on, and why the
  // process must restart besides its own state (what the cycle sets per process).
  mesh::test::ServiceWorld* services = nullptr;
  RestartCauses causes;

  void SetUp() override;

 private:
  std::unique_ptr<Context> contextFor(Mode mode) const;
  std::vector<std::unique_ptr<decl::Declaration>> declared_;
  int archives_ = 0;
};

}  // namespace mesh::apply::test
