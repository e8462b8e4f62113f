// The fleet's judgement (fleet/view.hh) on a range built here, large enough that the
// nodes are judged on several threads: each node keeps its own verdict and its place.
#include "fleet/view.hh"
#include "fleet/view/check_ahead.hh"
#include "fleet/view/json.hh"
#include "util/text_safe.hh"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../../support/files.hh"
#include "../../support/temp_dir.hh"
#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "fleet/statement.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "trust/signing.hh"

namespace mesh::fleet {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;
constexpr int64_t kLease = 0x1234;

struct Fleet {
  FleetKeys keys{"c"};
  trust::OperatorKey op = trust::OperatorKey::generate();
  EtcdRange range;
  int64_t revision = 1;
  // What each node's status says it applied ("" and none: nothing).
  std::string appliedDigest;
  std::optional<int64_t> appliedSerial;

  void put(const std::string& key, const std::string& value, int64_t lease = 0) {
    range.kvs.push_back({key, value, ++revision, revision, lease});
  }
  // A node as an agent leaves it: enrolled, its status (and seen copy) and heartbeat
  // signed by its key on one lease. `signer` signs instead of its own key (forged);
  // `up` false: no lease-bound keys (down).
  // `enroller` enrolls it instead of `op`.
  void node(const std::string& name, bool up = true, const trust::NodeKey* signer = nullptr,
            const trust::OperatorKey* enroller = nullptr) {
    const auto key = trust::NodeKey::ephemeral();
    put(enrollmentKey(keys, name),
        encodeEnrollment("c", name, key.publicKey(), kNow, enroller ? *enroller : op));
    NodeStatus s;
    s.node = name;
    s.cluster = "c";
    s.cycle = 3;
    s.lease = kLease;
    s.publishedAtMs = kNow - 1000;
    s.declarationDigest = appliedDigest;
    s.serial = appliedSerial;
    const std::string status = signNodeJson(encodeStatus(s), signer ? *signer : key);
    put(keys.seen(name), status);
    if (!up) return;
    put(keys.status(name), status, kLease);
    put(heartbeatKey(keys, name),
        signNodeJson(encodeHeartbeat({name, "c", 1, kNow - 5000, kLease}), key), kLease);
  }
};

TEST(FleetView, ALargeFleetIsJudgedNodeByNodeInOrder) {
  ASSERT_GE(sodium_init(), 0);
  Fleet f;
  const auto stranger = trust::NodeKey::ephemeral();
  for (int i = 0; i < 300; ++i) {
    const auto name = fmt::format("n-{:03}", i);
    f.node(name, i % 50 != 7, i == 123 ? &stranger : nullptr);
  }
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow);
  ASSERT_EQ(view.nodes.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const auto& n = view.nodes[static_cast<size_t>(i)];
    EXPECT_EQ(n.node, fmt::format("n-{:03}", i));
    const NodeState want = i == 123      ? NodeState::Forged
                           : i % 50 == 7 ? NodeState::Down
                                         : NodeState::Converged;
    EXPECT_EQ(n.state, want) << n.node << ": " << stateName(n.state);
    if (want == NodeState::Converged) {
      EXPECT_EQ(n.lastSeenMs(), kNow) << n.node;
    }
  }
  EXPECT_EQ(view.count(NodeState::Down), 6u);
  EXPECT_EQ(view.count(NodeState::Forged), 1u);
  EXPECT_EQ(view.count(NodeState::Converged), 293u);
}

// A reader that judges again and again (fleet serve) keeps what it verified: the same
// verdicts, and a value changed since, by one byte, is checked again and found forged.
TEST(FleetView, AMemoSparesCheckingAgainButNeverHidesAChange) {
  ASSERT_GE(sodium_init(), 0);
  Fleet f;
  for (int i = 0; i < 4; ++i) f.node(fmt::format("n-{}", i));
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  VerifiedMemo memo;
  for (int round = 0; round < 2; ++round) {
    const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow, &memo);
    EXPECT_EQ(view.count(NodeState::Converged), 4u) << "round " << round;
  }
  for (auto& kv : f.range.kvs) {
    if (kv.key == f.keys.status("n-1") || kv.key == f.keys.seen("n-1"))
      kv.value.replace(kv.value.find("\"cycle\":3"), 9, "\"cycle\":4");
    if (kv.key == enrollmentKey(f.keys, "n-2"))
      kv.value.replace(kv.value.find("\"enrolled_at_ms\":"), 17, "\"enrolled_at_ms\":1");
  }
  const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow, &memo);
  EXPECT_EQ(view.nodes[1].state, NodeState::Forged) << stateName(view.nodes[1].state);
  EXPECT_EQ(view.nodes[2].state, NodeState::Forged) << stateName(view.nodes[2].state);
  EXPECT_EQ(view.count(NodeState::Converged), 2u);
}

using ::mesh::test::slurp;

// Who pushed a version is the newest statement naming it, whatever the order the nodes
// are met in, and only that statement's signature decides whether it is marked verified:
// an older statement signed by another key, or changed after it was signed, changes
// nothing; a newest one not signed by a trusted key is shown, marked unverified. (Only
// the newest is checked: a fleet pushed node by node holds a statement per node.)
TEST(FleetView, TheNewestStatementOfAVersionAloneSaysWhoPushedIt) {
  ASSERT_GE(sodium_init(), 0);
  const auto other = trust::OperatorKey::generate();
  const std::string digest = "sha256:" + std::string(64, 'a');
  // Six nodes, each pushed its own statement of serial 7; the newest is n-2's.
  const auto fleet = [&](bool newestTrusted) {
    Fleet f;
    f.appliedDigest = digest;
    f.appliedSerial = 7;
    for (int i = 0; i < 6; ++i) {
      const std::string name = fmt::format("n-{}", i);
      f.node(name);
      const bool newest = i == 2;
      const auto& signer = newest == newestTrusted ? f.op : other;
      Statement st{"c", Selector{{name}}, digest, 7, kNow - (newest ? 1000 : 60000 + i), "", 0};
      st.pushedBy = signer.publicKey().text();
      std::string text = encodeStatement(st);
      const std::string signature = trust::signatureText(signer, text);
      if (i == 4) text.replace(text.find("\"serial\":7"), 10, "\"serial\":7 ");  // changed
      f.put(f.keys.declaration(name), encodePushed({text, signature, ""}));
    }
    std::sort(f.range.kvs.begin(), f.range.kvs.end(),
              [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
    return std::pair{viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow), f.op.publicKey().text()};
  };
  for (const bool newestTrusted : {true, false}) {
    const auto [view, trustedKey] = fleet(newestTrusted);
    ASSERT_EQ(view.versions.size(), 1u);
    const auto& v = view.versions[0];
    EXPECT_EQ(v.nodes.size(), 6u);
    EXPECT_EQ(v.pushedAtMs, kNow - 1000) << newestTrusted;
    EXPECT_EQ(v.pushedBy, newestTrusted ? trustedKey : other.publicKey().text());
    EXPECT_EQ(v.pushedVerified, newestTrusted);
    EXPECT_EQ(view.count(NodeState::Converged), 6u) << newestTrusted;
  }
}

// The memo's directory.
struct TempDir : mesh::test::TempDir {
  TempDir() : mesh::test::TempDir("mesh-memo") {}
};

// `fleet status` keeps its memo between runs in a directory: an entry counts only when
// tagged with the directory's own key; one changed, or tagged with another key, does not.
TEST(FleetView, AMemoKeptBetweenRunsCountsOnlyEntriesTaggedWithItsKey) {
  ASSERT_GE(sodium_init(), 0);
  TempDir tmp;
  const std::string dir = tmp.path + "/mesh-host";
  {
    VerifiedMemo memo;
    ASSERT_TRUE(memo.persistIn(dir));
    memo.add("sha256:aa");
    memo.add("sha256:bb");
    memo.save();
  }
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir + "/key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string entries = slurp(dir + "/verified");
  ASSERT_EQ(entries.size(), 2u * crypto_auth_hmacsha256_BYTES);
  EXPECT_EQ(entries.find("sha256:aa"), std::string::npos) << "entries are tags, not digests";
  {
    VerifiedMemo memo;
    ASSERT_TRUE(memo.persistIn(dir));
    EXPECT_TRUE(memo.has("sha256:aa"));
    EXPECT_TRUE(memo.has("sha256:bb"));
    EXPECT_FALSE(memo.has("sha256:cc"));
  }
  // Tampered: one entry changed by a bit, and one a writer without the key made for
  // "sha256:cc" (the digest itself, and a tag under a key of their own).
  entries[0] = static_cast<char>(entries[0] ^ 1);
  unsigned char otherKey[crypto_auth_hmacsha256_KEYBYTES];
  randombytes_buf(otherKey, sizeof otherKey);
  std::string forged(crypto_auth_hmacsha256_BYTES, '\0');
  const std::string cc = "sha256:cc";
  crypto_auth_hmacsha256(reinterpret_cast<unsigned char*>(forged.data()),
                         reinterpret_cast<const unsigned char*>(cc.data()), cc.size(), otherKey);
  entries += forged;
  entries += (cc + std::string(crypto_auth_hmacsha256_BYTES, '\0')).substr(0, forged.size());
  std::ofstream(dir + "/verified", std::ios::binary | std::ios::trunc) << entries;
  {
    VerifiedMemo memo;
    ASSERT_TRUE(memo.persistIn(dir));
    EXPECT_EQ(memo.has("sha256:aa") + memo.has("sha256:bb"), 1) << "a changed entry counted";
    EXPECT_FALSE(memo.has("sha256:cc")) << "an entry made without the key counted";
  }
  // A key others can read is not used at all.
  ASSERT_EQ(::chmod((dir + "/key").c_str(), 0644), 0);
  VerifiedMemo loose;
  EXPECT_FALSE(loose.persistIn(dir));
  EXPECT_FALSE(loose.has("sha256:bb"));
}

// The memo's directory is reached without following a link and only when it is the
// running user's: a root `fleet status` run with another user's HOME (or cache dir) that
// they replaced by a link to /etc must write nothing there, nor chmod what it points at.
TEST(FleetView, AMemoIsNotKeptThroughALinkOrInADirectoryOfAnotherUser) {
  ASSERT_GE(sodium_init(), 0);
  TempDir tmp;
  const std::string target = tmp.path + "/etc";
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);

  // DIR itself a link.
  ASSERT_EQ(::symlink(target.c_str(), (tmp.path + "/mesh-host").c_str()), 0);
  VerifiedMemo viaLink;
  EXPECT_FALSE(viaLink.persistIn(tmp.path + "/mesh-host"));
  // Its parent a link (the cache directory swapped for one).
  ASSERT_EQ(::symlink(target.c_str(), (tmp.path + "/cache").c_str()), 0);
  VerifiedMemo viaParent;
  EXPECT_FALSE(viaParent.persistIn(tmp.path + "/cache/mesh-host"));
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u) << "the link's target was chmod-ed";
  EXPECT_TRUE(std::filesystem::is_empty(target)) << "something was written through a link";

  // A directory of another user's.
  const std::string theirs = tmp.path + "/theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::chown(theirs.c_str(), ::geteuid() + 1, ::getegid()), 0);
  VerifiedMemo foreign;
  EXPECT_FALSE(foreign.persistIn(theirs));
  EXPECT_TRUE(std::filesystem::is_empty(theirs));
  foreign.add("sha256:aa");
  foreign.save();  // an in-memory memo: nothing written
  EXPECT_TRUE(std::filesystem::is_empty(theirs));
}

// Between runs, what was verified is remembered, but a value changed since is checked
// again (forged), and an enrollment counts only while its signer is trusted now.
TEST(FleetView, AMemoKeptBetweenRunsNeverHidesAChangeOrAnUntrustedEnroller) {
  ASSERT_GE(sodium_init(), 0);
  TempDir tmp;
  Fleet f;
  const auto writer = trust::OperatorKey::generate();
  for (int i = 0; i < 3; ++i) f.node(fmt::format("n-{}", i));
  f.node("n-3", true, nullptr, &writer);
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  const auto run = [&](const std::vector<trust::OperatorPublicKey>& trusted) {
    VerifiedMemo memo;
    EXPECT_TRUE(memo.persistIn(tmp.path));
    auto view = viewFleet(f.range, f.keys, trusted, kNow, &memo);
    memo.save();
    return view;
  };
  // The operator trusts the writer's key once: n-3's enrollment is remembered as good.
  EXPECT_EQ(run({f.op.publicKey(), writer.publicKey()}).count(NodeState::Converged), 4u);
  const auto again = run({f.op.publicKey()});
  EXPECT_EQ(again.nodes[3].state, NodeState::Forged) << stateName(again.nodes[3].state);
  EXPECT_NE(again.nodes[3].trustReason.find("not a trusted operator key"), std::string::npos)
      << again.nodes[3].trustReason;
  EXPECT_EQ(again.count(NodeState::Converged), 3u);
  for (auto& kv : f.range.kvs) {
    if (kv.key == f.keys.status("n-1") || kv.key == f.keys.seen("n-1"))
      kv.value.replace(kv.value.find("\"cycle\":3"), 9, "\"cycle\":4");
    if (kv.key == enrollmentKey(f.keys, "n-2"))
      kv.value.replace(kv.value.find("\"enrolled_at_ms\":"), 17, "\"enrolled_at_ms\":1");
  }
  const auto changed = run({f.op.publicKey()});
  EXPECT_EQ(changed.nodes[1].state, NodeState::Forged) << stateName(changed.nodes[1].state);
  EXPECT_EQ(changed.nodes[2].state, NodeState::Forged) << stateName(changed.nodes[2].state);
  EXPECT_EQ(changed.nodes[0].state, NodeState::Converged);
}

// A large fleet judged on several threads with a memo kept between runs: a value forged
// among many is found and named on the first run and on every run after (nothing of it is
// remembered), and a status a node signed naming no node as a string is forged, not a
// crash of the judging thread.
TEST(FleetView, AForgedValueAmongManyJudgedInParallelIsNamedEveryRun) {
  ASSERT_GE(sodium_init(), 0);
  TempDir tmp;
  Fleet f;
  const auto stranger = trust::NodeKey::ephemeral();
  for (int i = 0; i < 300; ++i)
    if (i != 200) f.node(fmt::format("n-{:03}", i), true, i == 77 ? &stranger : nullptr);
  // n-200 signs, with its own enrolled key, a status whose "node" is a number.
  const auto own = trust::NodeKey::ephemeral();
  f.put(enrollmentKey(f.keys, "n-200"),
        encodeEnrollment("c", "n-200", own.publicKey(), kNow, f.op));
  const std::string odd =
      signNodeJson(fmt::format(R"({{"cluster":"c","lease":{},"node":200}})", kLease), own);
  f.put(f.keys.status("n-200"), odd, kLease);
  f.put(f.keys.seen("n-200"), odd);
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  for (int run = 0; run < 2; ++run) {
    VerifiedMemo memo;
    ASSERT_TRUE(memo.persistIn(tmp.path + "/memo"));
    const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow, &memo);
    memo.save();
    ASSERT_EQ(view.nodes.size(), 300u);
    const auto& forged = view.nodes[77];
    EXPECT_EQ(forged.state, NodeState::Forged) << "run " << run;
    EXPECT_NE(forged.trustReason.find(f.keys.status("n-077")), std::string::npos)
        << forged.trustReason;
    EXPECT_NE(forged.trustReason.find("not signed by the node's enrolled key"), std::string::npos)
        << forged.trustReason;
    const auto& odd200 = view.nodes[200];
    EXPECT_EQ(odd200.state, NodeState::Forged) << "run " << run;
    EXPECT_NE(odd200.trustReason.find("signed for another node or cluster"), std::string::npos)
        << odd200.trustReason;
    EXPECT_EQ(view.count(NodeState::Converged), 298u) << "run " << run;
  }
}

// What is checked while the range still arrives (CheckAhead) is what the judging would
// remember itself, no more: a good node's enrollment and status; a forged status or an
// enrollment by a key not trusted is not remembered, and is judged forged all the same.
// The memo is loaded on CheckAhead's thread before anything is checked into it.
TEST(FleetView, WhatIsCheckedAheadIsWhatTheJudgingWouldRemember) {
  ASSERT_GE(sodium_init(), 0);
  TempDir tmp;
  Fleet f;
  const auto stranger = trust::NodeKey::ephemeral();
  const auto otherOp = trust::OperatorKey::generate();
  for (int i = 0; i < 4; ++i) f.node(fmt::format("n-{}", i));
  f.node("n-4", true, &stranger);          // its status signed by another key
  f.node("n-5", true, nullptr, &otherOp);  // enrolled by a key not trusted
  f.node("n-6", false);                    // down: a seen copy, no status
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  const std::vector<trust::OperatorPublicKey> trusted = {f.op.publicKey()};
  const std::string dir = tmp.path + "/memo";
  {
    VerifiedMemo memo;
    bool kept = false;
    CheckAhead ahead(f.keys, trusted, memo, [&] { kept = memo.persistIn(dir); });
    for (const auto& kv : f.range.kvs) ahead.see(kv);
    ahead.finish();
    ASSERT_TRUE(kept);
    memo.save();
  }
  // Four nodes' enrollment and status, and n-4's enrollment.
  EXPECT_EQ(slurp(dir + "/verified").size(), 9u * crypto_auth_hmacsha256_BYTES);
  VerifiedMemo memo;
  ASSERT_TRUE(memo.persistIn(dir));
  const auto view = viewFleet(f.range, f.keys, trusted, kNow, &memo);
  const auto fresh = viewFleet(f.range, f.keys, trusted, kNow);
  EXPECT_EQ(fleetJsonText(view), fleetJsonText(fresh));
  ASSERT_EQ(view.nodes.size(), 7u);
  EXPECT_EQ(view.nodes[4].state, NodeState::Forged) << stateName(view.nodes[4].state);
  EXPECT_EQ(view.nodes[5].state, NodeState::Forged) << stateName(view.nodes[5].state);
  EXPECT_EQ(view.nodes[6].state, NodeState::Down) << stateName(view.nodes[6].state);
  EXPECT_EQ(view.count(NodeState::Converged), 4u);
}

// An enrollment record is read in one pass (no JSON tree) when it is as `fleet enroll`
// writes it, else by the tree: one whose "node" or "cluster" is not a string is forged
// ("not an enrollment record"; it ended the judging thread, and `fleet status` with it,
// before), one with a key given twice is read as the tree reads it (the last counts), and
// a record with fields added or reordered is still enrolled.
TEST(FleetView, AnEnrollmentIsReadAsTheJsonTreeReadsItAndAnOddOneIsForged) {
  ASSERT_GE(sodium_init(), 0);
  Fleet f;
  for (int i = 0; i < 6; ++i) f.node(fmt::format("n-{}", i));
  const auto put = [&](const std::string& node, const auto& edit) {
    for (auto& kv : f.range.kvs)
      if (kv.key == enrollmentKey(f.keys, node)) {
        auto j = nlohmann::json::parse(kv.value);
        edit(j);
        kv.value = j.dump();
      }
  };
  put("n-1", [](nlohmann::json& j) { j["node"] = 1; });
  put("n-2", [](nlohmann::json& j) { j["cluster"] = nullptr; });
  put("n-3", [](nlohmann::json& j) { j["extra"] = {{"node", "other"}, {"list", {1, 2}}}; });
  for (auto& kv : f.range.kvs) {
    // n-4: "node" given twice, the wrong one first (the tree keeps the last: enrolled).
    if (kv.key == enrollmentKey(f.keys, "n-4")) kv.value = R"({"node":"n-9",)" + kv.value.substr(1);
    // n-5: given twice, the wrong one last: forged.
    if (kv.key == enrollmentKey(f.keys, "n-5"))
      kv.value = kv.value.substr(0, kv.value.size() - 1) + R"(,"node":"n-9"})";
  }
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  VerifiedMemo memo;
  for (int run = 0; run < 2; ++run) {  // checked, then remembered
    const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow, &memo);
    ASSERT_EQ(view.nodes.size(), 6u);
    for (int i : {0, 3, 4}) EXPECT_EQ(view.nodes[i].state, NodeState::Converged) << i;
    for (int i : {1, 2}) {
      EXPECT_EQ(view.nodes[i].state, NodeState::Forged) << i;
      EXPECT_NE(view.nodes[i].trustReason.find("not an enrollment record"), std::string::npos)
          << view.nodes[i].trustReason;
    }
    EXPECT_EQ(view.nodes[5].state, NodeState::Forged);
    EXPECT_NE(view.nodes[5].trustReason.find("enrolls node n-9"), std::string::npos)
        << view.nodes[5].trustReason;
  }
}

// `fleet status --json` writes the nodes straight into the text: byte for byte what the
// tree of fleetJson dumps, for every field a node can have (none, all, optional ones left
// out) and strings that need escaping; what the tree cannot dump (invalid UTF-8) throws
// alike.
TEST(FleetView, TheJsonTextIsTheJsonTreeDumped) {
  FleetView v;
  v.cluster = "c \"quoted\"";
  v.revision = 42;
  v.nowMs = kNow;
  NodeView bare;  // nothing known: down, no status
  bare.node = "n-bare";
  v.nodes.push_back(bare);
  NodeView full;
  full.node = "n-full\\back\tslash\x01\x1f\x7f";
  full.state = NodeState::Refused;
  full.up = true;
  full.heartbeatMs = kNow - 3;
  full.wanted = Statement{};
  full.wanted->serial = 7;
  full.wanted->declarationDigest = "sha256:ab";
  full.wantedRevision = 99;
  full.wantedValue = "sha256:cd";
  NodeStatus s;
  s.version = "0.1.0 \u00e9t\u00e9";  // UTF-8
  s.serial = 6;
  s.declarationDigest = "sha256:ef";
  s.revision = 98;
  s.cycle = 12;
  s.created = 1, s.updated = 2, s.unchanged = 3, s.removed = 4, s.released = 5, s.skipped = 6;
  s.failed = 7;
  s.failing = {{"file:/etc/a", "no \"space\"\n"}, {"unit:b", "\r\b\f"}};
  s.churning = {"x", "y\"z"};
  s.cycleError = "boom";
  s.refused = NodeStatus::Refusal{97, std::nullopt, "bad signature", kNow - 9, "sha256:cd", ""};
  full.status = s;
  full.unreadable = {"key /x: not JSON"};
  full.reasons = {"refused serial - …", "failed file:/etc/a: no"};
  full.lastError = "bad signature";
  v.nodes.push_back(full);
  NodeView forged = full;
  forged.node = "n-forged";
  forged.state = NodeState::Forged;
  forged.trust = "forged";
  forged.trustReason = "its status is not signed by its enrolled key";
  forged.status->refused->serial = 5;
  forged.status->serial.reset();
  forged.status->declarationDigest.clear();
  forged.wanted.reset();
  forged.wantedRevision = 0;
  forged.heartbeatMs = 0;
  v.nodes.push_back(forged);
  VersionView version;
  version.digest = "sha256:ef";
  version.serial = 6;
  version.nodes = {"n-full"};
  version.pushedBy = "mesh-op:abc";
  version.pushedAtMs = kNow - 100;
  v.versions = {version, VersionView{}};

  EXPECT_EQ(fleetJsonText(v), jsonOut(fleetJson(v)));
  EXPECT_EQ(fleetJsonText(FleetView{}), jsonOut(fleetJson(FleetView{})));

  // Bytes from etcd keys that are not UTF-8 (a node named "evil\xff") are replaced, as
  // every JSON writer replaces them, and C1 controls escaped: never a throw.
  v.nodes[1].lastError = "not UTF-8 \xff";
  v.nodes[2].node = "evil\xff\x1b[2K\xc2\x9b";
  EXPECT_EQ(fleetJsonText(v), jsonOut(fleetJson(v)));
  const auto parsed = nlohmann::json::parse(fleetJsonText(v));
  EXPECT_EQ(parsed["nodes"][2]["node"], "evil\ufffd\x1b[2K\u009b");
  EXPECT_EQ(fleetJsonText(v).find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace mesh::fleet
