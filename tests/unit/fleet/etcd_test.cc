// EtcdClient against a real etcd 3.4: one etcd per test process (tests/etcd/test_etcd.hh;
// skipped only when /usr/bin/etcd is missing).
#include "fleet/etcd.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_etcd.hh"
#include "util/fd.hh"

namespace mesh::fleet {
namespace {

using namespace std::chrono_literals;

class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& etcd = test::testEtcd();
    if (!etcd.skipReason.empty()) GTEST_SKIP() << etcd.skipReason;
    ASSERT_TRUE(etcd.failure.empty()) << etcd.failure;
    client = std::make_unique<EtcdClient>(etcd.url);
  }

  // A key prefix of the test's own, so tests never see each other's keys.
  static std::string key(const std::string& rest) {
    return std::string("/t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
           "/" + rest;
  }

  std::unique_ptr<EtcdClient> client;
};

TEST_F(EtcdTest, PutGetRoundTripIsBinarySafe) {
  const std::string k = key(std::string("bin\x01\xff", 5));
  const std::string v("nul\0byte \xff\xfe\x80 not utf-8\n", 24);
  const auto rev = client->put(k, v);
  EXPECT_GT(rev, 0);
  auto got = client->get(k);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, v);
  EXPECT_EQ(got->modRevision, rev);

  EXPECT_FALSE(client->get(key("missing")));
  client->put(k, "");  // an empty value: the gateway leaves "value" out
  got = client->get(k);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, "");
}

TEST_F(EtcdTest, GetPrefixReturnsOnlyKeysUnderIt) {
  client->put(key("p/b"), "2");
  client->put(key("p/a"), "1");
  const auto last = client->put(key("q"), "outside");
  auto range = client->getPrefix(key("p/"));
  ASSERT_EQ(range.kvs.size(), 2u);
  EXPECT_EQ(range.kvs[0].key, key("p/a"));
  EXPECT_EQ(range.kvs[0].value, "1");
  EXPECT_EQ(range.kvs[1].key, key("p/b"));
  EXPECT_GT(range.kvs[1].modRevision, 0);
  EXPECT_GE(range.revision, last);
  EXPECT_TRUE(client->getPrefix(key("none/")).kvs.empty());
}

// A range read over gRPC is read as it arrives: an observer is shown each key-value once,
// in key order, exactly as the range returns it — here 300 values of 1–3 KB, so that
// keys and values are cut across the pieces the answer arrives in.
TEST_F(EtcdTest, GetPrefixShowsEachKeyValueAsItIsRead) {
  for (int i = 0; i < 300; ++i)
    client->put(key(fmt::format("s/{:03}", i)), std::string(1000 + 7 * i, static_cast<char>(i)));
  std::vector<EtcdKeyValue> seen;
  const auto range =
      client->getPrefix(key("s/"), [&](const EtcdKeyValue& kv) { seen.push_back(kv); });
  EXPECT_EQ(client->grpcReads(), 1u);
  ASSERT_EQ(range.kvs.size(), 300u);
  ASSERT_EQ(seen.size(), range.kvs.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].key, key(fmt::format("s/{:03}", i)));
    EXPECT_EQ(seen[i].key, range.kvs[i].key);
    EXPECT_EQ(seen[i].value, range.kvs[i].value) << seen[i].key;
    EXPECT_EQ(seen[i].value.size(), 1000 + 7 * i);
    EXPECT_EQ(seen[i].modRevision, range.kvs[i].modRevision);
  }
}

// getPrefix reads over etcd's gRPC API: every byte of keys and values (NUL, 0xff, empty,
// a large value), each key's revisions and lease exactly as the gateway's calls read them.
TEST_F(EtcdTest, GetPrefixOverGrpcReadsWhatTheGatewayReads) {
  const std::string big(900 * 1024, '\xfe');
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const auto lease = client->grantLease(30);
  client->put(key(std::string("g/bin\0\xff", 7)), all);
  client->put(key("g/empty"), "");
  client->put(key("g/big"), big);
  client->put(key("g/leased"), "on a lease", lease);
  const auto last = client->put(key("g/leased"), "again on it", lease);
  client->put(key("g0"), "outside");

  const auto range = client->getPrefix(key("g/"));
  EXPECT_EQ(client->grpcReads(), 1u);
  EXPECT_GE(range.revision, last);
  const auto listed = client->keysUnder(key("g/"));  // the gateway's, without values
  ASSERT_EQ(range.kvs.size(), 4u);
  ASSERT_EQ(listed.kvs.size(), range.kvs.size());
  for (size_t i = 0; i < range.kvs.size(); ++i) {
    const auto& kv = range.kvs[i];
    EXPECT_EQ(kv.key, listed.kvs[i].key);
    EXPECT_EQ(kv.modRevision, listed.kvs[i].modRevision) << kv.key;
    EXPECT_EQ(kv.createRevision, listed.kvs[i].createRevision) << kv.key;
    EXPECT_EQ(kv.lease, listed.kvs[i].lease) << kv.key;
    const auto got = client->get(kv.key);
    ASSERT_TRUE(got) << kv.key;
    EXPECT_EQ(kv.value, got->value) << kv.key;
  }
  EXPECT_EQ(range.kvs[0].value, big);
  EXPECT_EQ(range.kvs[1].key, key(std::string("g/bin\0\xff", 7)));
  EXPECT_EQ(range.kvs[1].value, all);
  EXPECT_EQ(range.kvs[3].lease, lease);
  EXPECT_EQ(range.kvs[3].modRevision, last);
  EXPECT_LT(range.kvs[3].createRevision, last);
  EXPECT_TRUE(client->getPrefix(key("none/")).kvs.empty());
  EXPECT_EQ(client->grpcReads(), 2u);
}

// One transaction: every compare must hold (a mod revision, or absence), else nothing
// of `success` runs and `failure` does; puts and deletes, ranges included.
TEST_F(EtcdTest, TxnRunsItsOperationsOnlyWhenEveryCompareHolds) {
  const auto rev = client->put(key("a"), "1");
  client->put(key("r/1"), "x");
  client->put(key("r/2"), "y");
  auto r = client->txn({{key("a"), rev}, {key("b"), 0}},
                       {EtcdOp::put(key("a"), "2"), EtcdOp::put(key("b"), "new"),
                        EtcdOp::del(key("r/"), EtcdClient::prefixEnd(key("r/")))});
  EXPECT_TRUE(r.succeeded);
  EXPECT_GT(r.revision, rev);
  EXPECT_EQ(client->get(key("a"))->value, "2");
  EXPECT_EQ(client->get(key("a"))->modRevision, r.revision);
  EXPECT_EQ(client->get(key("b"))->value, "new");
  EXPECT_TRUE(client->getPrefix(key("r/")).kvs.empty());

  // The same compares fail now: a's revision moved, b exists.
  r = client->txn({{key("a"), rev}, {key("b"), 0}}, {EtcdOp::put(key("a"), "3")},
                  {EtcdOp::put(key("failed"), "yes")});
  EXPECT_FALSE(r.succeeded);
  EXPECT_EQ(client->get(key("a"))->value, "2");
  EXPECT_EQ(client->get(key("failed"))->value, "yes");
}

TEST_F(EtcdTest, KeysUnderListsKeysWithoutValues) {
  client->put(key("k/1"), std::string(1000, 'v'));
  client->put(key("k/2"), "v");
  client->put(key("other"), "v");
  const auto r = client->keysUnder(key("k/"));
  ASSERT_EQ(r.kvs.size(), 2u);
  EXPECT_EQ(r.kvs[0].key, key("k/1"));
  EXPECT_EQ(r.kvs[0].value, "");
  EXPECT_GT(r.kvs[0].modRevision, 0);
  EXPECT_GT(r.revision, 0);
}

// etcd's refusal of more operations than --max-txn-ops in one transaction is said plainly.
TEST_F(EtcdTest, ATransactionOverEtcdsOpsLimitSaysWhichLimit) {
  std::vector<EtcdOp> ops;
  for (std::size_t i = 0; i <= kEtcdMaxTxnOps; ++i)
    ops.push_back(EtcdOp::put(key(std::to_string(i)), "v"));
  try {
    client->txn({}, ops);
    ADD_FAILURE() << "etcd took " << ops.size() << " operations in one transaction";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(--max-txn-ops, 128 by default)"), std::string::npos)
        << e.what();
  }
}

TEST_F(EtcdTest, PrefixEnd) {
  EXPECT_EQ(EtcdClient::prefixEnd("/a/"), "/a0");
  EXPECT_EQ(EtcdClient::prefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(EtcdClient::prefixEnd(""), std::string(1, '\0'));
}

TEST_F(EtcdTest, Delete) {
  client->put(key("k"), "v");
  EXPECT_TRUE(client->del(key("k")));
  EXPECT_FALSE(client->get(key("k")));
  EXPECT_FALSE(client->del(key("k")));
}

TEST_F(EtcdTest, RevokedLeaseTakesItsKeys) {
  const auto lease = client->grantLease(30);
  EXPECT_NE(lease, 0);
  client->put(key("alive"), "1", lease);
  ASSERT_TRUE(client->get(key("alive")));
  EXPECT_EQ(client->getPrefix(key("")).kvs.at(0).lease, lease);
  EXPECT_TRUE(client->revoke(lease));
  EXPECT_FALSE(client->get(key("alive")));
  EXPECT_FALSE(client->revoke(lease));  // already gone
}

TEST_F(EtcdTest, ExpiredLeaseTakesItsKeys) {
  const auto lease = client->grantLease(1);
  const auto rev = client->put(key("alive"), "1", lease);
  std::vector<EtcdEvent> seen;
  const bool ended = client->watch(
      key("alive"), rev + 1,
      [&](const std::vector<EtcdEvent>& events) {
        seen.insert(seen.end(), events.begin(), events.end());
        return events.back().type != EtcdEvent::Type::Delete;
      },
      10s);
  ASSERT_TRUE(ended) << "no delete event within 10 s of a 1 s lease";
  EXPECT_EQ(seen.back().kv.key, key("alive"));
  EXPECT_GT(seen.back().kv.modRevision, rev);
  EXPECT_FALSE(client->get(key("alive")));
  EXPECT_EQ(client->keepAliveOnce(lease), 0);  // expired
}

TEST_F(EtcdTest, KeepAliveOnceExtendsTheLease) {
  const auto lease = client->grantLease(1);
  client->put(key("alive"), "1", lease);
  const auto until = std::chrono::steady_clock::now() + 2s;  // twice the TTL
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_EQ(client->keepAliveOnce(lease), 1);
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_TRUE(client->get(key("alive")));
  EXPECT_TRUE(client->revoke(lease));
  EXPECT_EQ(client->keepAliveOnce(lease), 0);
}

TEST_F(EtcdTest, TxnPutIfAbsent) {
  const auto lease = client->grantLease(30);
  EXPECT_TRUE(client->txnPutIfAbsent(key("slot"), "first", lease));
  EXPECT_FALSE(client->txnPutIfAbsent(key("slot"), "second", lease));
  EXPECT_EQ(client->get(key("slot"))->value, "first");
  client->revoke(lease);
  EXPECT_TRUE(client->txnPutIfAbsent(key("slot"), "third"));  // freed with the lease
}

TEST_F(EtcdTest, TxnPutIfUnchanged) {
  // Absent expected: the first put wins, a second one expecting absence loses.
  const auto first = client->txnPutIfUnchanged(key("decl"), "one", 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(client->get(key("decl"))->modRevision, *first);
  EXPECT_FALSE(client->txnPutIfUnchanged(key("decl"), "lost", 0));
  // The revision read expected: it puts; a stale one (another put came between) loses.
  const auto second = client->txnPutIfUnchanged(key("decl"), "two", *first);
  ASSERT_TRUE(second);
  EXPECT_GT(*second, *first);
  EXPECT_FALSE(client->txnPutIfUnchanged(key("decl"), "stale", *first));
  EXPECT_EQ(client->get(key("decl"))->value, "two");
}

TEST_F(EtcdTest, WatchSeesPutsAndDeletesAfterItsRevision) {
  const auto rev = client->put(key("w/before"), "old");
  std::vector<EtcdEvent> seen;
  std::atomic<bool> ended{false};
  std::thread watcher([&] {
    ended = client->watch(
        key("w/"), rev + 1,
        [&](const std::vector<EtcdEvent>& events) {
          seen.insert(seen.end(), events.begin(), events.end());
          return seen.size() < 3;
        },
        10s, EtcdClient::WatchScope::Prefix);
  });
  client->put(key("w/a"), "1");
  client->put(key("outside"), "x");
  client->put(key("w/b"), "2");
  client->del(key("w/a"));
  watcher.join();
  ASSERT_TRUE(ended);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].type, EtcdEvent::Type::Put);
  EXPECT_EQ(seen[0].kv.key, key("w/a"));
  EXPECT_EQ(seen[0].kv.value, "1");
  EXPECT_EQ(seen[1].kv.key, key("w/b"));
  EXPECT_EQ(seen[2].type, EtcdEvent::Type::Delete);
  EXPECT_EQ(seen[2].kv.key, key("w/a"));
  EXPECT_LT(seen[0].kv.modRevision, seen[2].kv.modRevision);
}

TEST_F(EtcdTest, WatchTimesOutQuietly) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(client->watch(
      key("quiet"), 0, [](const auto&) { return true; }, 300ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

// Regression: a watch whose timeout ended before etcd's response headers arrived threw
// "etcd at … unreachable: Operation timed out …" although etcd was up (9 in 50 with a 1 ms
// timeout on loopback); now and then the 1 ms ended even before the loopback connect
// ("Connection timed out after 1 milliseconds"). Both are quiet timeouts.
TEST_F(EtcdTest, WatchTimingOutBeforeTheHeadersArriveTimesOutQuietly) {
  int thrown = 0;
  std::string firstError;
  for (const auto timeout : {1ms, 2ms, 3ms})
    for (int i = 0; i < 50; ++i) {
      try {
        EXPECT_FALSE(client->watch(
            key("quiet"), 0, [](const auto&) { return true; }, timeout));
      } catch (const Error& e) {
        if (thrown++ == 0) firstError = e.what();
      }
    }
  EXPECT_EQ(thrown, 0) << "of 150 watches with 1-3 ms timeouts; the first: " << firstError;
}

// A loopback port whose listener never accepts and whose backlog is full: the kernel drops
// further SYNs, so a connect there hangs until the client's timeout.
class HangingListener {
 public:
  HangingListener() : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    auto* sa = reinterpret_cast<sockaddr*>(&addr);
    if (!listener_ || ::bind(listener_.get(), sa, len) != 0 || ::listen(listener_.get(), 0) != 0 ||
        ::getsockname(listener_.get(), sa, &len) != 0)
      return;
    for (int i = 0; i < 4; ++i) {  // more than the backlog of 0 (+1) can queue
      Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      (void)::connect(s.get(), sa, len);  // EINPROGRESS; it never completes for the last ones
      filling_.push_back(std::move(s));
    }
    url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  std::string url;  // "" when the socket calls failed

 private:
  Fd listener_;
  std::vector<Fd> filling_;
};

// The other side of the regression above: a timeout before the connection was made is
// still "unreachable", not a quiet timeout.
TEST(EtcdUnreachable, WatchThatCannotConnectBeforeItsTimeoutThrowsUnreachable) {
  HangingListener hanging;
  ASSERT_FALSE(hanging.url.empty()) << "cannot set up a listener on loopback";
  EtcdClient client(hanging.url);
  try {
    client.watch(
        "/k", 0, [](const auto&) { return true; }, 200ms);
    FAIL() << "a watch that never connected returned as if it timed out quietly";
  } catch (const EtcdCompacted&) {
    FAIL() << "unreachable reported as compacted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("etcd at " + hanging.url + " unreachable: "),
              std::string::npos)
        << e.what();
  }
}

TEST_F(EtcdTest, WatchFromACompactedRevisionThrowsEtcdCompacted) {
  const auto first = client->put(key("c"), "1");
  client->put(key("c"), "2");
  const auto third = client->put(key("c"), "3");
  client->put(key("c"), "4");
  client->compact(third);
  try {
    client->watch(
        key("c"), first, [](const auto&) { return false; }, 5s);
    FAIL() << "no EtcdCompacted";
  } catch (const EtcdCompacted& e) {
    EXPECT_EQ(e.compactRevision(), third);
    EXPECT_NE(std::string(e.what()).find("compacted"), std::string::npos) << e.what();
  }
  // From the compact revision on, the watch works again.
  std::vector<EtcdEvent> seen;
  EXPECT_TRUE(client->watch(
      key("c"), third,
      [&](const std::vector<EtcdEvent>& events) {
        seen = events;
        return false;
      },
      5s));
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].kv.value, "3");
}

TEST_F(EtcdTest, GatewayErrorsNameTheOperation) {
  try {
    client->put(key("x"), "v", 12345);  // no such lease
    FAIL() << "put with an unknown lease succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("etcd put " + key("x") + " failed: HTTP "), std::string::npos) << msg;
    EXPECT_NE(msg.find("lease not found"), std::string::npos) << msg;
  }
}

TEST(EtcdUnreachable, ErrorsNameTheEndpoint) {
  EtcdClient client("http://127.0.0.1:1", 2s);
  for (int op = 0; op < 3; ++op) {
    try {
      if (op == 0) client.get("/k");
      if (op == 1) client.grantLease(5);
      if (op == 2)
        client.watch(
            "/k", 0, [](const auto&) { return true; }, 2s);
      FAIL() << "operation " << op << " reached an etcd at port 1";
    } catch (const EtcdCompacted&) {
      FAIL() << "unreachable reported as compacted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("etcd at http://127.0.0.1:1 unreachable: "),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(EtcdClient("127.0.0.1:2379"), InputError);
}

}  // namespace
}  // namespace mesh::fleet
