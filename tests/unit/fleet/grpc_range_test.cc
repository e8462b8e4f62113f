// The gRPC range reader (src/fleet/etcd/grpc_codec.hh) against a real oracle: libprotobuf
// (test-only) encodes random RangeResponses from etcd_range.proto — etcd's own field
// numbers — and the hand-written reader must read each back exactly, whatever the bytes of
// its keys and values and however the answer is split into chunks; and each encoding cut
// at every byte must never be taken as a whole answer. The same idea as diff.cc's test
// against /usr/bin/diff: the reader is held to the implementation etcd itself uses.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "etcd_range.pb.h"
#include "fleet/etcd/grpc_codec.hh"

namespace mesh::fleet::etcd {
namespace {

using Rng = std::mt19937_64;

std::string randomBytes(Rng& rng, std::size_t n) {
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

// Lengths that cross protobuf's one- and two-byte length prefixes, and empty ones.
std::size_t randomLength(Rng& rng) {
  switch (rng() % 4) {
    case 0:
      return 0;
    case 1:
      return rng() % 16;
    case 2:
      return 120 + rng() % 20;
    default:
      return rng() % 2000;
  }
}

// An int64 of any size: small, large, negative (a 10-byte varint), or 0 (left out).
std::int64_t randomInt(Rng& rng) {
  switch (rng() % 4) {
    case 0:
      return 0;
    case 1:
      return static_cast<std::int64_t>(rng() % 200);
    case 2:
      return static_cast<std::int64_t>(rng() >> 1);
    default:
      return static_cast<std::int64_t>(rng());
  }
}

mesh_test::etcd::RangeResponse randomResponse(Rng& rng, int maxKvs) {
  mesh_test::etcd::RangeResponse r;
  if (rng() % 8 != 0) {  // now and then no header at all
    auto* h = r.mutable_header();
    h->set_cluster_id(rng());
    h->set_member_id(rng());
    h->set_revision(randomInt(rng));
    h->set_raft_term(rng() % 10);
  }
  const int n = static_cast<int>(rng() % static_cast<std::uint64_t>(maxKvs + 1));
  for (int i = 0; i < n; ++i) {
    auto* kv = r.add_kvs();
    kv->set_key(randomBytes(rng, randomLength(rng)));
    kv->set_create_revision(randomInt(rng));
    kv->set_mod_revision(randomInt(rng));
    kv->set_version(randomInt(rng));
    kv->set_value(randomBytes(rng, randomLength(rng)));
    kv->set_lease(randomInt(rng));
  }
  r.set_more(rng() % 2 == 0);
  r.set_count(randomInt(rng));
  return r;
}

// gRPC's framing of one message: not compressed, the length big-endian.
std::string framed(const std::string& message) {
  std::string out(5, '\0');
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>(message.size() >> (24 - 8 * i));
  return out + message;
}

// What the reader must read: the header's cluster ID and revision, every kv as sent.
void expectRead(const RangeStream& got, const mesh_test::etcd::RangeResponse& sent) {
  ASSERT_TRUE(got.whole());
  EXPECT_EQ(got.clusterId, sent.header().cluster_id());
  EXPECT_EQ(got.out.revision, sent.header().revision());
  ASSERT_EQ(got.out.kvs.size(), static_cast<std::size_t>(sent.kvs_size()));
  for (int i = 0; i < sent.kvs_size(); ++i) {
    const auto& want = sent.kvs(i);
    const auto& kv = got.out.kvs[static_cast<std::size_t>(i)];
    EXPECT_EQ(kv.key, want.key()) << "kv " << i;
    EXPECT_EQ(kv.value, want.value()) << "kv " << i;
    EXPECT_EQ(kv.createRevision, want.create_revision()) << "kv " << i;
    EXPECT_EQ(kv.modRevision, want.mod_revision()) << "kv " << i;
    EXPECT_EQ(kv.lease, want.lease()) << "kv " << i;
  }
}

TEST(GrpcRange, ARandomRangeResponseIsReadBackExactlyHoweverItArrives) {
  Rng rng(20261202);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto sent = randomResponse(rng, 12);
    const std::string body = framed(sent.SerializeAsString());
    {  // in one piece
      RangeStream s(nullptr);
      s.feed(body);
      expectRead(s, sent);
    }
    {  // a byte at a time: every field waits for its last byte
      RangeStream s(nullptr);
      for (char c : body) s.feed(std::string_view(&c, 1));
      expectRead(s, sent);
    }
    {  // in random chunks, each key-value shown as it is read, in order
      std::vector<std::string> shown;
      const EtcdClient::KvObserver onKv = [&](const EtcdKeyValue& kv) { shown.push_back(kv.key); };
      RangeStream s(&onKv);
      for (std::size_t at = 0; at < body.size();) {
        const std::size_t n = 1 + rng() % 300;
        s.feed(std::string_view(body).substr(at, n));
        at += n;
      }
      expectRead(s, sent);
      ASSERT_EQ(shown.size(), static_cast<std::size_t>(sent.kvs_size()));
      for (int i = 0; i < sent.kvs_size(); ++i)
        EXPECT_EQ(shown[static_cast<std::size_t>(i)], sent.kvs(i).key());
    }
  }
}

TEST(GrpcRange, AnAnswerCutAtAnyByteIsNeverTakenAsWhole) {
  Rng rng(7);
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto sent = randomResponse(rng, 6);
    const std::string body = framed(sent.SerializeAsString());
    for (std::size_t cut = 0; cut < body.size(); ++cut) {
      RangeStream s(nullptr);
      s.feed(std::string_view(body).substr(0, cut));
      EXPECT_FALSE(s.whole()) << "cut at " << cut << " of " << body.size();
    }
  }
}

// The message itself cut at every byte and framed as whole: the reader takes it exactly
// when libprotobuf parses it (a cut between two fields is a shorter, valid message) and
// then reads what libprotobuf reads; a cut inside a field is refused by both.
TEST(GrpcRange, AMessageCutAtAnyByteIsReadAsLibprotobufReadsIt) {
  Rng rng(11);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string message = randomResponse(rng, 6).SerializeAsString();
    for (std::size_t cut = 0; cut <= message.size(); ++cut) {
      const std::string part = message.substr(0, cut);
      mesh_test::etcd::RangeResponse oracle;
      const bool parses = oracle.ParseFromString(part);
      RangeStream s(nullptr);
      s.feed(framed(part));
      ASSERT_EQ(s.whole(), parses) << "cut at " << cut << " of " << message.size();
      if (parses) {
        expectRead(s, oracle);
        ++accepted;
      } else {
        ++refused;
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
}

TEST(GrpcRange, TheRequestIsTheRangeRequestLibprotobufReads) {
  Rng rng(3);
  for (int round = 0; round < 50; ++round) {
    const std::string key = randomBytes(rng, randomLength(rng)),
                      end = randomBytes(rng, randomLength(rng));
    const std::string body = rangeRequest(key, end);
    ASSERT_GE(body.size(), 5U);
    EXPECT_EQ(body[0], '\0');  // not compressed
    std::uint32_t length = 0;
    for (int i = 1; i < 5; ++i) length = length << 8 | static_cast<unsigned char>(body[i]);
    ASSERT_EQ(length, body.size() - 5);
    mesh_test::etcd::RangeRequest oracle;
    ASSERT_TRUE(oracle.ParseFromString(body.substr(5)));
    EXPECT_EQ(oracle.key(), key);
    EXPECT_EQ(oracle.range_end(), end);
  }
}

}  // namespace
}  // namespace mesh::fleet::etcd
