// A full disk, for real: small tmpfs mounts (a few hundred KiB) under the target
// root, over the state directory and as a blob directory, filled with `dd` until
// ENOSPC, and the real `mesh-host apply` / `blob add` run against them. What must
// hold: a resource that does not fit fails saying ENOSPC and leaves what was there,
// byte for byte, with no temp file behind; every other resource converges; the store
// never claims what is not on disk; a restart owed is never lost (nor paid twice);
// and once there is room again, the next apply converges.
//
// Mounting needs root: each test skips cleanly without it (or without tmpfs).
#include <fmt/format.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "../leftovers/processes.hh"
#include "agent_process.hh"
#include "harness.hh"
#include "tiny_http.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kEnospc = "No space left on device";

// `n` bytes that differ with `seed` and do not repeat in a short period (a
// compressing file system or archive would otherwise make them small).
std::string bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>('a' + x % 26);
  }
  return s;
}

std::string sha256Hex(const std::string& file) {
  Result r = runCommand({"sha256sum", file});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out.substr(0, 64);
}

// Every temp or half-switched name under `dir`: what a write cut short leaves.
std::vector<std::string> leftovers(const std::string& dir) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".mesh-tmp") || name.starts_with(".mesh-new") || name.starts_with(".tmp-"))
      out.push_back(it->path().string());
  }
  return out;
}

class FullDisk : public Node {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
    Node::SetUp();
  }

  void TearDown() override {
    if (IsSkipped() && work.empty()) return;
    // Processes first (they hold files on the mounts), then the mounts, then the tree.
    test::killProcessesUsing(work);
    for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    Node::TearDown();
  }

  // A tmpfs of `kib` KiB at `dir` (made when missing); skips the test when the
  // kernel will not mount one here.
  void mountTmpfs(const std::string& dir, int kib) {
    fs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, fmt::format("size={}k", kib).c_str()) != 0)
      GTEST_SKIP() << "cannot mount a tmpfs at " << dir << ": " << std::strerror(errno);
    mounts.push_back(dir);
  }

  // Fills the file system of `dir` until ENOSPC, then gives back `leave` bytes
  // (tmpfs frees the pages a truncate drops), so exactly that much is free.
  void fillLeaving(const std::string& dir, size_t leave) {
    const std::string filler = dir + "/filler";
    Result dd = runCommand({"sh", "-c", "dd if=/dev/zero of='" + filler + "' bs=4k"});
    ASSERT_NE(dd.err.find(kEnospc), std::string::npos) << dd.err;
    const auto size = fs::file_size(filler);
    ASSERT_GE(size, leave);
    fs::resize_file(filler, size - leave);
    fillers.insert(filler);
  }
  void makeRoom() {
    for (const auto& f : fillers) fs::remove(f);
    fillers.clear();
  }

  // The resource's record as `status --json` shows it.
  nlohmann::json statusOf(const std::string& id) {
    Result st = mesh({"status", "--json"});
    auto j = nlohmann::json::parse(st.out, nullptr, false);
    if (j.is_discarded()) return {};
    for (const auto& r : j["resources"])
      if (r["id"] == id) return r;
    return {};
  }

  std::vector<std::string> mounts;
  std::set<std::string> fillers;
};

// ---- 1. The target root full ----------------------------------------------

// A file update that does not fit: failed, naming ENOSPC; the old content stays
// byte for byte and no temp file is left; another resource converges; exit 1
// (a resource failed, docs/json.md). The record keeps the old digest (a record
// claiming the new one would make the next cycle take the old bytes for drift,
// or worse, for converged). Room again: `updated`.
TEST_F(FullDisk, AFileThatDoesNotFitFailsAndTheOldOneStays) {
  mountTmpfs(at("/srv"), 256);
  const std::string old = bytes(3000, 1);
  std::ofstream(work + "/old", std::ios::binary) << old;
  const std::string oldBlob = publish(work + "/old");
  const std::string big = bytes(64 * 1024, 2);
  std::ofstream(work + "/big", std::ios::binary) << big;
  const std::string bigBlob = publish(work + "/big");
  auto decl = [&](const std::string& blob, const std::string& other) {
    return declare(fmt::format(R"(
[module.m.file.big]
path = "/srv/big"
blob = "{}"

[module.m.file.other]
path = "/etc/other"
content = "{}"
)",
                               blob, other));
  };
  Result r = apply(decl(oldBlob, "one"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string wroteOld = outcomeOf(r.json(), "m.big")["wrote"];

  fillLeaving(at("/srv"), 16 * 1024);
  r = apply(decl(bigBlob, "two"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.big");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o.dump().find(kEnospc), std::string::npos) << o.dump();
  EXPECT_EQ(outcomeOf(r.json(), "m.other")["outcome"], "updated");
  EXPECT_EQ(read("/etc/other"), "two");
  EXPECT_TRUE(read("/srv/big") == old) << "the old content changed";
  EXPECT_EQ(leftovers(at("/srv")), std::vector<std::string>{});
  EXPECT_EQ(statusOf("m.big").value("wrote", ""), wroteOld) << statusOf("m.big").dump();

  makeRoom();
  r = apply(decl(bigBlob, "two"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.big")["outcome"], "updated");
  EXPECT_TRUE(read("/srv/big") == big);
  EXPECT_EQ(statusOf("m.big").value("wrote", ""), outcomeOf(r.json(), "m.big")["wrote"]);
}

// Declared changes that failed on ENOSPC once and then, with room again,
// succeeded: the declared change made late, not churn. Two rounds of it (the
// default threshold is 2): `status` exits 0 and flags nothing churning.
TEST_F(FullDisk, AChangeThatFailedOnceOnAFullDiskIsNotChurn) {
  mountTmpfs(at("/srv"), 256);
  constexpr int kFiles = 3;
  auto decl = [&](int version) {
    std::string text;
    for (int i = 0; i < kFiles; ++i)
      text += fmt::format("[module.m.file.f{0}]\npath = \"/srv/f{0}\"\ncontent = \"{1}\"\n\n", i,
                          bytes(24 * 1024, 10 * version + i));
    return declare(text, fmt::format("v{}.toml", version));
  };
  Result r = apply(decl(0));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (int version = 1; version <= 2; ++version) {
    SCOPED_TRACE(fmt::format("version {}", version));
    fillLeaving(at("/srv"), 8 * 1024);
    Result full = apply(decl(version));
    EXPECT_EQ(full.code, 1) << full.out << full.err;
    for (int i = 0; i < kFiles; ++i)
      EXPECT_EQ(outcomeOf(full.json(), fmt::format("m.f{}", i))["outcome"], "failed") << full.out;
    makeRoom();
    r = apply(decl(version));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    for (int i = 0; i < kFiles; ++i)
      EXPECT_EQ(outcomeOf(r.json(), fmt::format("m.f{}", i))["reason"], "declared") << r.out;
  }
  Result st = mesh({"status", "--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  EXPECT_EQ(st.json()["churning"], 0) << st.out;
  Result text = mesh({"status"});
  EXPECT_EQ(text.out.find("churning m."), std::string::npos) << text.out;
}

// Many files in one batch, room for only some of them: each file holds its old
// bytes or its new ones, never a mix or a truncation; each says which (updated:
// new, failed with ENOSPC: old); no temp file stays. The test checks that the
// disk really let some through and stopped others, so it exercises the mix.
TEST_F(FullDisk, ABatchWhereSomeFilesFitLeavesEachOldOrNew) {
  mountTmpfs(at("/srv"), 640);
  constexpr int kFiles = 24;
  auto name = [](int i) { return fmt::format("f{:02}", i); };
  auto content = [](int i, int version) {
    return version == 1 ? fmt::format("old {}\n", i) : bytes(16 * 1024, 100 + i);
  };
  auto decl = [&](int version) {
    std::string text;
    for (int i = 0; i < kFiles; ++i)
      text +=
          fmt::format("[module.m.file.{0}]\npath = \"/srv/d/{0}\"\ncontent = \"{1}\"\n\n", name(i),
                      version == 1 ? "old " + std::to_string(i) + "\\n" : content(i, version));
    return declare(text);
  };
  Result r = apply(decl(1));
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  fillLeaving(at("/srv"), 100 * 1024);  // ~6 of the 24 new files fit
  r = apply(decl(2));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto report = r.json();
  int updated = 0, failed = 0;
  for (int i = 0; i < kFiles; ++i) {
    const auto o = outcomeOf(report, "m." + name(i));
    const std::string got = read("/srv/d/" + name(i));
    if (o["outcome"] == "updated") {
      ++updated;
      EXPECT_TRUE(got == content(i, 2)) << name(i) << " updated but holds " << got.size() << " B";
    } else {
      ++failed;
      EXPECT_EQ(o["outcome"], "failed") << o.dump();
      EXPECT_NE(o.dump().find(kEnospc), std::string::npos) << o.dump();
      EXPECT_EQ(got, content(i, 1)) << name(i) << " failed but does not hold its old bytes";
    }
  }
  EXPECT_GT(updated, 0) << "nothing fit: the test did not exercise a partial batch";
  EXPECT_GT(failed, 0) << "everything fit: the test did not exercise a full disk";
  EXPECT_EQ(leftovers(at("/srv")), std::vector<std::string>{});

  makeRoom();
  r = apply(decl(2));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["summary"]["updated"], failed) << r.out;
  for (int i = 0; i < kFiles; ++i)
    EXPECT_TRUE(read("/srv/d/" + name(i)) == content(i, 2)) << name(i);
}

// An archive whose new tree does not fit: the unpack fails beside the old tree,
// which stays in place untouched (same inodes, same bytes), and the half-unpacked
// new tree is removed. Room again: updated to the new tree.
TEST_F(FullDisk, AnArchiveThatDoesNotFitLeavesTheOldTree) {
  mountTmpfs(at("/opt"), 512);
  const std::string v1 = publish(makeArchive(
      {{"bin/app", "v1\n"}, {"share/data", bytes(8 * 1024, 3)}}, "tar -cf out bin share"));
  const std::string v2 = publish(makeArchive(
      {{"bin/app", "v2\n"}, {"share/data", bytes(300 * 1024, 4)}}, "tar -cf out bin share"));
  auto decl = [&](const std::string& bundle) {
    return declare(fmt::format(R"(
[module.m.archive.app]
path = "/opt/app"
bundle = "{}"

[module.m.file.other]
path = "/etc/other"
content = "{}"
)",
                               bundle, bundle.substr(7, 8)));
  };
  Result r = apply(decl(v1));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto before = snapshotTree(at("/opt/app"));

  fillLeaving(at("/opt"), 64 * 1024);
  r = apply(decl(v2));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.app");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o.dump().find(kEnospc), std::string::npos) << o.dump();
  EXPECT_EQ(outcomeOf(r.json(), "m.other")["outcome"], "updated");
  EXPECT_EQ(snapshotTree(at("/opt/app")), before);
  EXPECT_EQ(leftovers(at("/opt")), std::vector<std::string>{});

  makeRoom();
  r = apply(decl(v2));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.app")["outcome"], "updated");
  EXPECT_EQ(read("/opt/app/bin/app"), "v2\n");
  EXPECT_TRUE(read("/opt/app/share/data") == bytes(300 * 1024, 4));
}

// A credential that does not fit: failed with ENOSPC, the old secret stays, and
// no temp file (a plaintext copy of the secret) is left anywhere.
TEST_F(FullDisk, ACredentialThatDoesNotFitLeavesTheOldSecret) {
  mountTmpfs(at("/srv"), 256);
  const std::string secretFile = work + "/secret";
  auto decl = declare(R"(
[module.m.credential.key]
path = "/srv/key"
from = "secret"
)");
  std::ofstream(secretFile, std::ios::binary) << "first-secret";
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  const std::string second = bytes(48 * 1024, 5);
  std::ofstream(secretFile, std::ios::binary | std::ios::trunc) << second;
  fillLeaving(at("/srv"), 8 * 1024);
  r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.key");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o.dump().find(kEnospc), std::string::npos) << o.dump();
  EXPECT_EQ(read("/srv/key"), "first-secret");
  EXPECT_EQ(leftovers(at("/srv")), std::vector<std::string>{});
  EXPECT_EQ(r.out.find(second.substr(0, 32)), std::string::npos);

  makeRoom();
  r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.key")["outcome"], "updated");
  EXPECT_TRUE(read("/srv/key") == second);
}

// ---- 2. The state directory full -----------------------------------------

// The store on a full disk. For each amount of room left (none, then a page
// more each round, until a whole cycle fits), two files change and an apply runs:
// one that cannot write its records fails saying so (exit 1, the store's file
// and SQLite's "database or disk is full"), and while it is full no record says
// a file holds what it does not (a record may lag — the old digest beside new
// bytes, which the next cycle hashes — but never lead). With room again, the next
// apply converges, the store says what each file holds, and the cycle after is a
// no-op. `wrote` is the want's digest (content, mode, owner), so it is compared
// with what `plan` reports the new content would hold, and what the store said
// before the round. The sweep must reach a round where a file changed and the
// cycle still failed (its records did not fit), or it tested nothing.
TEST_F(FullDisk, AStoreThatCannotBeWrittenFailsAndClaimsNothing) {
  mountTmpfs(stateDir(), 1024);
  const std::vector<std::string> ids = {"m.a", "m.b"};
  auto decl = [&](int version) {
    return declare(fmt::format(R"(
[module.m.file.a]
path = "/etc/a"
content = "a{0}"

[module.m.file.b]
path = "/etc/b"
content = "b{0}"
)",
                               version));
  };
  Result r = apply(decl(0));
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  int changedThenFailed = 0, round = 1;
  for (;; ++round) {
    ASSERT_LE(round, 100) << "no cycle ever fit";
    const size_t room = 4096 * (round - 1);
    SCOPED_TRACE(fmt::format("round {}: {} KiB left", round, room / 1024));
    std::map<std::string, std::string> before, after;  // id -> wrote
    for (const auto& id : ids) before[id] = statusOf(id).value("wrote", "");
    Result p = plan(decl(round), true);
    ASSERT_EQ(p.code, 3) << p.out << p.err;
    for (const auto& id : ids) after[id] = outcomeOf(p.json(), id)["wrote"];
    auto content = [&](const std::string& id, int version) {
      return id.substr(2) + std::to_string(version);
    };
    auto path = [](const std::string& id) { return "/etc/" + id.substr(2); };

    fillLeaving(stateDir(), room);
    Result full = apply(decl(round));
    if (full.code != 0) {
      EXPECT_EQ(full.code, 1) << full.out << full.err;
      EXPECT_NE(full.err.find("database or disk is full"), std::string::npos) << full.err;
      EXPECT_NE(full.err.find(stateDir() + "/state.db"), std::string::npos) << full.err;
      // `status` says why, on the full disk itself, and never calls it a kill.
      Result st = mesh({"status"});
      EXPECT_EQ(st.code, 1) << st.out << st.err;
      EXPECT_NE((st.out + st.err).find("database or disk is full"), std::string::npos)
          << st.out << st.err;
      EXPECT_EQ(st.out.find("killed or crashed"), std::string::npos) << st.out;
    }
    bool changed = false;
    for (const auto& id : ids) {
      const std::string now = read(path(id)), claimed = statusOf(id).value("wrote", "");
      if (now == content(id, round - 1)) {
        EXPECT_EQ(claimed, before[id]) << id << " holds its old bytes; " << full.err;
      } else {
        EXPECT_EQ(now, content(id, round)) << id;
        EXPECT_TRUE(claimed == before[id] || claimed == after[id]) << id << ": " << claimed;
        changed = true;
      }
    }
    if (full.code != 0 && changed) ++changedThenFailed;

    makeRoom();
    r = apply(decl(round));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    for (const auto& id : ids) {
      EXPECT_EQ(read(path(id)), content(id, round));
      EXPECT_EQ(statusOf(id).value("wrote", ""), after[id]) << id;
    }
    r = apply(decl(round));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.json()["summary"]["unchanged"], 2) << r.out;
    if (HasFailure() || full.code == 0) break;
  }
  EXPECT_GT(changedThenFailed, 0) << round << " rounds";
}

// A real agent whose state directory fills up while something keeps writing a
// managed file (drift): no cycle can run. `status` says so and why (the store's
// "database or disk is full"), exits 1, and does not call it a kill; the agent's
// cycles by event back off instead of failing every second; with room again the
// next one runs and `status` is clean.
TEST_F(FullDisk, AnAgentWhoseStateDirectoryIsFullSaysSoAndBacksOff) {
  mountTmpfs(stateDir(), 1024);
  const std::string decl =
      declare("[module.m.file.a]\npath = \"/etc/m/a\"\ncontent = \"one\"\n", "agent.toml");
  auto agent =
      std::make_unique<AgentProcess>(agentArgv(decl, "5m"), std::map<std::string, std::string>{});
  ASSERT_TRUE(agent->nextSummary(10s, "start")) << agent->log();
  fillLeaving(stateDir(), 0);

  // 8 s of drift, a write every 50 ms: without a back-off, a failed cycle a second.
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; !done; ++i) {
      std::ofstream(at("/etc/m/a"), std::ios::trunc) << "w" << i;
      std::this_thread::sleep_for(50ms);
    }
  });
  agent->waitFor([](const Json&) { return false; }, 8s);
  done = true;
  writer.join();
  int failed = 0;
  for (const auto& l : agent->lines())
    failed += l.value("msg", "").find("cycle could not run") != std::string::npos;
  EXPECT_GE(failed, 1) << agent->log();
  EXPECT_LE(failed, 5) << "cycles by event must back off while none can run\n" << agent->log();
  RecordProperty("failed_cycles_in_8s", failed);

  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("could not"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("database or disk is full"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("killed or crashed"), std::string::npos) << st.out;
  Result js = mesh({"status", "--json"});
  EXPECT_EQ(js.code, 1);
  EXPECT_NE(js.json()["last_error"].value("message", "").find("database or disk is full"),
            std::string::npos)
      << js.out;

  makeRoom();
  std::ofstream(at("/etc/m/a"), std::ios::trunc) << "edited";
  ASSERT_TRUE(agent->waitFor(
      [](const Json& l) {
        return AgentProcess::isSummary(l) && l.value("trigger", "").starts_with("drift: ");
      },
      15s))
      << agent->log();
  EXPECT_EQ(read("/etc/m/a"), "one");
  st = mesh({"status", "--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  EXPECT_TRUE(st.json()["last_error"].is_null()) << st.out;
  agent->signal(SIGTERM);
  EXPECT_EQ(agent->waitExit(10s), 0) << agent->log();
}

// A restart owed when the store filled up is never lost, nor paid twice. A
// process restarts on its config; the state directory (store, unit, bundle, log)
// is a small tmpfs. For each amount of room left — none, then a page more each
// round, so that the store fails at every point of the cycle in turn: before the
// intent, between the change and its record, between the restart and its record
// — the config changes, an apply runs on the full disk, room is made, and one
// more apply runs. Then the running service must have read the newest config
// (each copy appends the config it read to `starts` as it starts), only one copy
// may ever have started with it, and the apply after that must restart nothing.
TEST_F(FullDisk, ARestartOwedWhenTheStoreFilledUpIsNeverLost) {
  // Each start appends the config it read to `starts`: one line per start.
  const std::string bundle = publish(
      makeArchive({{"bin/svc",
                    "#!/bin/sh\nread -r cfg < \"$MESH_CONFIG\"\necho \"$cfg\" >> \"$MESH_STARTS\"\n"
                    "exec sleep 100000\n"}},
                  "chmod 755 bin/svc && tar -cf out bin"));
  mountTmpfs(stateDir(), 2048);
  extraArgs = {"--supervisor", "builtin"};
  auto decl = [&](const std::string& config) {
    return declare(fmt::format(R"(
[module.m.file.config]
path = "/etc/m/config"
content = "{0}"

[module.m.process.svc]
bundle = "{1}"
restart-on = ["m.config"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/etc/m/config", "MESH_STARTS={{root}}/starts"] }}
)",
                               config, bundle));
  };
  auto service = [&] {
    Result st = mesh({"status", "--json"});
    auto j = nlohmann::json::parse(st.out, nullptr, false);
    if (!j.is_discarded())
      for (const auto& r : j["resources"])
        if (r["id"] == "m.svc") return r["service"];
    ADD_FAILURE() << "no service in status: " << st.out << st.err;
    return nlohmann::json::object();
  };
  Result r = apply(decl("c0"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(slurp(at("/starts")), "c0\n");
  // How often a copy started with `config`, and what the newest one read.
  auto starts = [&](const std::string& config) {
    std::ifstream in(at("/starts"));
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line == config;
    return n;
  };
  auto newest = [&] {
    std::ifstream in(at("/starts"));
    std::string line, last;
    while (std::getline(in, line)) last = line;
    return last;
  };

  // Rounds until one has room for the whole cycle; counts those where the
  // config was changed but the cycle failed (its records did not fit).
  int changedThenFailed = 0, round = 1;
  for (;; ++round) {
    ASSERT_LE(round, 100) << "no cycle ever fit";
    const size_t room = 4096 * (round - 1);
    SCOPED_TRACE(fmt::format("round {}: {} KiB left", round, room / 1024));
    const std::string config = fmt::format("c{}", round);
    fillLeaving(stateDir(), room);
    Result full = apply(decl(config));
    if (full.code != 0) {
      EXPECT_TRUE(full.err.find("database or disk is full") != std::string::npos ||
                  full.out.find(kEnospc) != std::string::npos ||
                  full.err.find(kEnospc) != std::string::npos)
          << full.out << full.err;
      if (read("/etc/m/config") == config) ++changedThenFailed;
    }
    makeRoom();
    r = apply(decl(config));
    EXPECT_EQ(r.code, 0) << "full: " << full.out << full.err << "\nafter: " << r.out << r.err;
    // The running copy read the newest config (the restart owed was made), and
    // only one copy ever started with it (it was not made twice).
    EXPECT_EQ(newest(), config) << "full: " << full.out << full.err << "\nafter: " << r.out;
    EXPECT_EQ(starts(config), 1) << "full: " << full.out << full.err << "\nafter: " << r.out;
    const auto s = service();
    EXPECT_TRUE(s.value("active", false)) << s.dump();
    r = apply(decl(config));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(outcomeOf(r.json(), "m.svc")["restarted"], false) << r.out;
    if (HasFailure() || full.code == 0) break;
  }
  // The sweep reached the window between a change and its record.
  EXPECT_GT(changedThenFailed, 0) << round << " rounds";
}

// A process whose new bundle does not fit in <state-dir>/bundles (the store,
// on the same tmpfs, still has room): failed with ENOSPC, the service keeps
// running its old bundle (same pid, old tree intact), and no half-unpacked tree
// is left, under its final name (where it would pass for the bundle) or as a
// temp. Room again: updated and restarted onto the new bundle.
TEST_F(FullDisk, AProcessBundleThatDoesNotFitKeepsTheServiceRunning) {
  const std::string script =
      "#!/bin/sh\necho \"$(cat \"$MESH_BUNDLE_DIR/version\")\" >> \"$MESH_STARTS\"\n"
      "exec sleep 100000\n";
  const std::string v1 = publish(makeArchive({{"bin/svc", script}, {"version", "v1"}},
                                             "chmod 755 bin/svc && tar -cf out bin version"));
  const std::string v2 =
      publish(makeArchive({{"bin/svc", script}, {"version", "v2"}, {"data", bytes(300 * 1024, 7)}},
                          "chmod 755 bin/svc && tar -cf out bin version data"));
  mountTmpfs(stateDir(), 1024);
  extraArgs = {"--supervisor", "builtin"};
  auto decl = [&](const std::string& bundle) {
    return declare(fmt::format(R"(
[module.m.process.svc]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_BUNDLE_DIR={{bundle}}", "MESH_STARTS={{root}}/starts"] }}
)",
                               bundle));
  };
  auto pid = [&] {
    const auto status = nlohmann::json::parse(mesh({"status", "--json"}).out);
    for (const auto& r : status["resources"])
      if (r["id"] == "m.svc") return r["service"].value("pid", 0);
    return 0;
  };
  Result r = apply(decl(v1));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(slurp(at("/starts")), "v1\n");
  const int first = pid();
  ASSERT_GT(first, 0);
  const std::string bundles = stateDir() + "/bundles";
  const auto before = snapshotTree(bundles + "/" + v1.substr(7));

  fillLeaving(stateDir(), 128 * 1024);
  r = apply(decl(v2));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.svc");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o.dump().find(kEnospc), std::string::npos) << o.dump();
  EXPECT_EQ(pid(), first);
  EXPECT_EQ(::kill(first, 0), 0) << "the old service is gone";
  EXPECT_EQ(slurp(at("/starts")), "v1\n");
  EXPECT_EQ(snapshotTree(bundles + "/" + v1.substr(7)), before);
  EXPECT_FALSE(fs::exists(bundles + "/" + v2.substr(7)));
  EXPECT_EQ(leftovers(bundles), std::vector<std::string>{});

  makeRoom();
  r = apply(decl(v2));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.svc")["outcome"], "updated");
  EXPECT_EQ(slurp(at("/starts")), "v1\nv2\n");
  EXPECT_NE(pid(), first);
}

// ---- 3. The blob directory full -----------------------------------------------

// `blob add` into a directory that cannot hold the blob: a clear error (ENOSPC,
// exit 1), nothing under the digest's name nor a temp file, so no half blob can
// later pass for the whole one; an apply naming the digest finds no blob and
// fails, writing nothing. Room again: the same command publishes it whole.
TEST_F(FullDisk, ABlobThatDoesNotFitIsNotPublished) {
  const std::string store = work + "/store";
  mountTmpfs(store, 256);
  const std::string file = work + "/bundle.tar";
  std::ofstream(file, std::ios::binary) << bytes(200 * 1024, 6);
  const std::string hex = sha256Hex(file);
  fs::create_directories(store + "/sha256");
  fillLeaving(store, 64 * 1024);

  Result r = runCommand({MESH_HOST_BIN, "blob", "add", file, "--to", store});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(kEnospc), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(store + "/sha256/" + hex));
  EXPECT_EQ(leftovers(store), std::vector<std::string>{});

  // A file declared from that digest through that store: not found, nothing written.
  blobs = store;
  r = apply(declare("[module.m.file.x]\npath = \"/etc/x\"\nblob = \"sha256:" + hex + "\"\n"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.x")["outcome"], "failed");
  EXPECT_FALSE(fs::exists(at("/etc/x")));

  makeRoom();
  r = runCommand({MESH_HOST_BIN, "blob", "add", file, "--to", store});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "sha256:" + hex + "\n");
  EXPECT_EQ(sha256Hex(store + "/sha256/" + hex), hex);
}

// A blob fetched over HTTP into a state directory that cannot hold it: the
// download into <state-dir>/blobs fails, only the resource that needs it fails
// (naming ENOSPC), its temp file is removed and nothing sits in the cache under
// the digest's name, so no half blob is later taken from the cache for the whole
// one: with room again the next apply fetches it anew and writes the whole file.
TEST_F(FullDisk, ABlobFetchThatDoesNotFitLeavesNoHalfBlobInTheCache) {
  TinyHttpServer server;
  mountTmpfs(stateDir(), 1024);
  const std::string body = bytes(300 * 1024, 8);
  std::ofstream(work + "/blob", std::ios::binary) << body;
  const std::string hex = sha256Hex(work + "/blob");
  server.serve("/store/sha256/" + hex, {200, body});
  blobs = fmt::format("http://127.0.0.1:{}/store", server.port());
  auto decl = declare(fmt::format(R"(
[module.m.file.big]
path = "/etc/big"
blob = "sha256:{}"

[module.m.file.other]
path = "/etc/other"
content = "converges"
)",
                                  hex));
  // A first cycle with room makes the store; the cache then is empty.
  Result r = apply(
      declare("[module.m.file.other]\npath = \"/etc/other\"\ncontent = \"first\"\n", "first.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  fillLeaving(stateDir(), 128 * 1024);
  r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.big");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  // Its Content-Length is more than the room above the free-space margin: refused
  // before a byte is written (an endless body: the test below).
  EXPECT_NE(o.dump().find("the server announced 307200 bytes, and"), std::string::npos) << o.dump();
  EXPECT_EQ(outcomeOf(r.json(), "m.other")["outcome"], "updated");
  EXPECT_FALSE(fs::exists(at("/etc/big")));
  EXPECT_FALSE(fs::exists(stateDir() + "/blobs/sha256/" + hex));
  EXPECT_EQ(leftovers(stateDir()), std::vector<std::string>{});

  makeRoom();
  r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.big")["outcome"], "created");
  EXPECT_TRUE(read("/etc/big") == body);
  EXPECT_EQ(sha256Hex(stateDir() + "/blobs/sha256/" + hex), hex);
}

// An endless body from a blob server, into a state directory of 4 MiB: the download
// stops while the margin (5% of the file system here) is still free — the disk is
// never filled, whatever the server sends — the resource fails saying so, the temp
// file is removed, and every other resource converges.
TEST_F(FullDisk, AnEndlessBlobBodyStopsAtTheFreeSpaceMargin) {
  TinyHttpServer server;
  mountTmpfs(stateDir(), 4096);
  const std::string hex(64, 'e');
  Reply endless{200, bytes(65536, 9)};
  endless.endless = true;
  server.serve("/store/sha256/" + hex, endless);
  blobs = fmt::format("http://127.0.0.1:{}/store", server.port());
  Result r = apply(
      declare("[module.m.file.other]\npath = \"/etc/other\"\ncontent = \"first\"\n", "first.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  r = apply(declare(fmt::format(R"(
[module.m.file.big]
path = "/etc/big"
blob = "sha256:{}"

[module.m.file.other]
path = "/etc/other"
content = "converges"
)",
                                hex)));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.big");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o.dump().find("bytes are kept free there (MESH_HOST_HTTP_MIN_FREE)"), std::string::npos)
      << o.dump();
  EXPECT_EQ(o.dump().find(kEnospc), std::string::npos) << o.dump();
  EXPECT_EQ(outcomeOf(r.json(), "m.other")["outcome"], "updated");
  EXPECT_FALSE(fs::exists(at("/etc/big")));
  EXPECT_EQ(leftovers(stateDir()), std::vector<std::string>{});
  const auto space = fs::space(stateDir());
  EXPECT_GE(space.available, 4096u * 1024 / 20) << "the margin was eaten into";
}

}  // namespace
}  // namespace mesh::e2e
