// `mesh-host fleet history`: every push recorded under /mesh/<cluster>/pushes/, listed
// newest first, signed by the pushing key, trimmed to the last kKeptPushes.
#include <fmt/format.h>

#include "../support/raw_bytes.hh"
#include "fleet/push_history.hh"
#include "fleet_fixture.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

using FleetHistory = FleetTest;

TEST_F(FleetHistory, EveryPushIsListedNewestFirstWithItsResults) {
  ASSERT_EQ(push({"--nodes", "web1,web2", declare(declText(1))}).code, 0);
  ASSERT_EQ(push({"--nodes", "web*,db1", declare(declText(2), "two.toml")}).code, 0);
  ASSERT_EQ(push({"--nodes", "web1", declare(declText(2), "two.toml")}).code, 0);  // unchanged

  Result r = runCommand(fleetArgv("history", {"--json"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.json();
  EXPECT_EQ(j.at("schema"), 1);
  EXPECT_EQ(j.at("cluster"), cluster);
  const auto& pushes = j.at("pushes");
  ASSERT_EQ(pushes.size(), 3u) << j.dump();
  EXPECT_EQ(pushes[0].at("selector"), "web1");
  EXPECT_EQ(pushes[0].at("results"),
            (nlohmann::json{{"pushed", 0}, {"unchanged", 1}, {"conflict", 0}}));
  EXPECT_EQ(pushes[1].at("selector"), "web*, db1");
  EXPECT_EQ(pushes[1].at("nodes"), 3);
  EXPECT_EQ(pushes[1].at("serial"), 2);
  EXPECT_EQ(pushes[1].at("digest"), Digest::ofBytes(declText(2)).str());
  EXPECT_EQ(pushes[2].at("serial"), 1);
  EXPECT_EQ(pushes[2].at("results").at("pushed"), 2);
  for (const auto& p : pushes) {
    EXPECT_EQ(p.at("pushed_by"), operatorKey.text());
    EXPECT_TRUE(p.at("outcomes").is_null()) << "no --wait";
    EXPECT_TRUE(p.at("verified").is_null()) << "no --trust";
    EXPECT_GE(p.at("pushed_at_ms").get<int64_t>(), pushes.back().at("pushed_at_ms").get<int64_t>());
  }

  r = runCommand(fleetArgv("history", {"--limit", "2"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("WHEN"), 0u) << r.out;
  EXPECT_NE(r.out.find("0 pushed, 1 unchanged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("web*, db1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(shortDigest(Digest::ofBytes(declText(2)).str())), std::string::npos);
  EXPECT_EQ(r.out.find(shortDigest(Digest::ofBytes(declText(1)).str())), std::string::npos)
      << "--limit 2 leaves out the oldest:\n"
      << r.out;
}

// Records are informational, but signed: --trust marks those its key signed, and a
// record rewritten by an etcd writer (or signed by another key) is not verified.
TEST_F(FleetHistory, TrustMarksRecordsSignedByTheKeyAndNotTamperedOnes) {
  ASSERT_EQ(push({"--node", "web1", declare(declText(1))}).code, 0);
  ASSERT_EQ(push({"--node", "web1", declare(declText(2), "two.toml")}).code, 0);
  auto kvs = client->getPrefix(keys.pushesPrefix()).kvs;
  ASSERT_EQ(kvs.size(), 2u);
  auto value = nlohmann::json::parse(kvs[0].value);  // the older one
  auto record = nlohmann::json::parse(value.at("record").get<std::string>());
  record["serial"] = 99;
  value["record"] = record.dump();
  client->put(kvs[0].key, value.dump());

  Result r = runCommand(fleetArgv("history", {"--json", "--trust", operatorKey.text()}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto pushes = r.json().at("pushes");
  ASSERT_EQ(pushes.size(), 2u);
  EXPECT_EQ(pushes[0].at("verified"), true);
  EXPECT_EQ(pushes[1].at("serial"), 99);
  EXPECT_EQ(pushes[1].at("verified"), false);

  const auto other = trust::OperatorKey::generate().publicKey().text();
  r = runCommand(fleetArgv("history", {"--trust", other}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find(" verified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NOT VERIFIED"), std::string::npos) << r.out;
}

// Only the newest kKeptPushes records stay: a push deletes the older ones.
TEST_F(FleetHistory, APushKeepsOnlyTheNewestRecords) {
  const auto key = trust::OperatorKey::load(keyFile);
  for (std::size_t i = 0; i < kKeptPushes; ++i) {
    PushRecord old;
    old.digest = "sha256:" + std::string(64, 'a');
    old.serial = static_cast<int64_t>(i);
    old.pushedBy = operatorKey.text();
    old.pushedAtMs = 1000 + static_cast<int64_t>(i);  // long ago, in order
    old.selector = "web1";
    client->put(keys.push(old.pushedAtMs, old.digest), encodePushRecord(old, key));
  }
  ASSERT_EQ(push({"--node", "web1", declare(declText(500))}).code, 0);
  const auto left = client->keysUnder(keys.pushesPrefix()).kvs;
  ASSERT_EQ(left.size(), kKeptPushes);
  EXPECT_EQ(left.front().key, keys.push(1001, "sha256:" + std::string(64, 'a')))
      << "the oldest one went";
  const auto newest = readPushHistory(*client, keys, 1, {});
  ASSERT_EQ(newest.size(), 1u);
  ASSERT_TRUE(newest[0].record) << newest[0].problem;
  EXPECT_EQ(newest[0].record->serial, 500);
}

// With --wait, the record gains the outcome counts once the wait is over.
TEST_F(FleetHistory, PushWaitRecordsTheOutcomes) {
  Result r = push({"--node", "web1", "--wait", "300ms", declare(declText(1))});
  EXPECT_EQ(r.code, 1) << "web1 never answers: " << r.out << r.err;
  Result h = runCommand(fleetArgv("history", {"--json"}));
  ASSERT_EQ(h.code, 0) << h.err;
  const auto pushes = h.json().at("pushes");
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].at("outcomes"),
            (nlohmann::json{{"applied", 0}, {"failed", 0}, {"refused", 0}, {"timed_out", 1}}));
}

TEST_F(FleetHistory, LimitZeroIsBadInput) {
  Result r = runCommand(fleetArgv("history", {"--limit", "0"}));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--limit 0: give 1 or more"), std::string::npos) << r.err;
  r = runCommand(fleetArgv("history", {"--limit", "0", "--json"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.json().at("error").at("kind"), "bad_input") << r.out;
}

// Issue 27.1 and 27.2: push records are written by anyone who can write etcd. Records with
// \xff, ESC, CR and U+202E in their key, in their fields and in a value that is no JSON
// are listed — the JSON parses with U+FFFD where the bad byte was, the text shows every
// byte escaped — and a real push among them still is.
TEST_F(FleetHistory, HostileRecordsWrittenRawIntoEtcdAreListedEscaped) {
  using mesh::test::nothingRaw;
  using mesh::test::Shown;
  ASSERT_EQ(push({"--node", "web1", declare(declText(1))}).code, 0);
  const std::string hostile = "\xff\x1b[2J\r\xe2\x80\xae";
  const std::string prefix = keys.pushesPrefix();
  // A record of the right shape whose strings hold the bytes (raw: not valid JSON text
  // for \xff, which a strict parser refuses), one in proper JSON escapes, and no JSON.
  auto record = [&](const std::string& text) {
    return nlohmann::json{{"record", text}, {"signature", "mesh-sig:" + hostile}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::ignore);
  };
  const std::string fields = fmt::format(
      R"({{"type": "mesh-host push record v1", "digest": "sha256:{0}", "serial": 7,
          "pushed_by": "mesh-op:{0}", "pushed_at_ms": 1700000000000, "selector": "web{0}",
          "nodes": 1, "results": {{"pushed": 1, "unchanged": 0, "conflict": 0}},
          "outcomes": null}})",
      "\\u001b[2J\\r\\u202e\\u0085");
  client->put(prefix + "9999999999999998-" + hostile, record(fields));
  std::string raw = record(fields);
  raw.replace(raw.find("web"), 3, "web\xff\x1b");
  client->put(prefix + "9999999999999997-raw", raw);
  client->put(prefix + "9999999999999999-" + hostile + "\n", "not JSON " + hostile + "\x07");

  Result j = runCommand(fleetArgv("history", {"--json"}));
  EXPECT_EQ(j.code, 0) << j.out << j.err;
  const auto answer = j.json();
  EXPECT_TRUE(nothingRaw(j.out, Shown::Json)) << "fleet history --json";
  EXPECT_TRUE(nothingRaw(j.err, Shown::Text)) << "fleet history --json, stderr";
  ASSERT_EQ(answer.at("pushes").size(), 4u) << j.out;
  EXPECT_EQ(answer["pushes"][0].at("key"),
            prefix + "9999999999999999-\xef\xbf\xbd\x1b[2J\r\xe2\x80\xae\n")
      << j.out;
  EXPECT_EQ(answer["pushes"][1].at("selector"), "web\x1b[2J\r\xe2\x80\xae\xc2\x85") << j.out;
  EXPECT_EQ(answer["pushes"][3].at("serial"), 1) << j.out;

  Result text = runCommand(fleetArgv("history", {}));
  EXPECT_EQ(text.code, 0) << text.out << text.err;
  EXPECT_TRUE(nothingRaw(text.out + text.err, Shown::Text)) << "fleet history";
  EXPECT_NE(text.out.find("web\\e[2J\\r\\u{202e}\\xc2\\x85"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("9999999999999999-\\xff\\e[2J\\r\\u{202e}\\n"), std::string::npos)
      << text.out;
}

TEST_F(FleetHistory, NoPushYetSaysSo) {
  Result r = runCommand(fleetArgv("history", {}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "no push recorded in cluster " + cluster + "\n");
}

}  // namespace
}  // namespace mesh::fleet::test
