// What a node accepts from its declaration key: every rule on the signed statement
// (src/agent/fleet_accept.hh), on plain strings; the same rules against a real etcd and
// real nodes are in tests/fleet/nodes_test.cc.
#include "agent/fleet_accept.hh"

#include <gtest/gtest.h>
#include <sodium.h>

#include <limits>

#include "decl/parse.hh"
#include "trust/signing.hh"
#include "util/digest.hh"
#include "util/error.hh"

namespace mesh::agent {
namespace {

std::string declText(int64_t serial, const std::string& content = "x") {
  return "serial = " + std::to_string(serial) +
         "\n[module.m.file.f]\npath = \"/etc/f\"\ncontent = \"" + content + "\"\n";
}

class FleetAccept : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(sodium_init(), 0);
    o.cluster = "prod";
    o.node = "web-1";
    o.trusted = {key.publicKey()};
    o.parse = [](const std::string& text, const std::string& where) {
      decl::ParseOptions po;
      po.node = "web-1";
      return decl::parseDeclaration(text, where, po);
    };
  }

  fleet::Statement statement(const std::string& text, int64_t serial) const {
    fleet::Statement st;
    st.cluster = "prod";
    st.selector.items = {"web-*"};
    st.declarationDigest = Digest::ofBytes(text).str();
    st.serial = serial;
    st.pushedAtMs = 1000;
    st.pushedBy = key.publicKey().text();
    return st;
  }

  std::string value(const fleet::Statement& st, const std::string& text) const {
    fleet::PushedDeclaration p;
    p.statement = fleet::encodeStatement(st);
    p.signature = trust::signatureText(key, p.statement);
    p.text = text;
    return fleet::encodePushed(p);
  }

  // The reason a value is refused, "" when it is accepted.
  std::string refusal(const std::string& v, const ReplayFloor& floor = {},
                      const std::optional<fleet::Statement>& inForce = std::nullopt) const {
    try {
      acceptPushed(v, 7, "etcd:k@7", o, floor, inForce);
      return "";
    } catch (const InputError& e) {
      return e.what();
    }
  }

  trust::OperatorKey key = trust::OperatorKey::generate();
  FleetOptions o;
};

TEST_F(FleetAccept, ASignedStatementForThisNodeIsAcceptedWithItsSignedOptions) {
  auto st = statement(declText(3), 3);
  st.maxParallelRestarts = 2;
  const auto a = acceptPushed(value(st, declText(3)), 7, "k", o, {}, std::nullopt);
  EXPECT_EQ(a.statement, st);
  EXPECT_EQ(a.maxParallelRestarts, 2);
  EXPECT_EQ(a.declaration.serial, 3);
  EXPECT_EQ(a.revision, 7);
}

TEST_F(FleetAccept, AnotherNodeOrClusterIsRefused) {
  auto st = statement(declText(3), 3);
  st.selector.items = {"db1", "web-2"};
  EXPECT_NE(refusal(value(st, declText(3))).find("is for nodes db1, web-2 and this node is web-1"),
            std::string::npos);
  st = statement(declText(3), 3);
  st.cluster = "staging";
  EXPECT_NE(refusal(value(st, declText(3))).find("is for cluster staging"), std::string::npos);
}

TEST_F(FleetAccept, BytesOtherThanTheSignedDigestAreRefused) {
  const auto st = statement(declText(3), 3);
  EXPECT_NE(refusal(value(st, declText(3, "evil"))).find("not the ones the operator signed"),
            std::string::npos);
}

TEST_F(FleetAccept, AStatementSignedByOneKeyNamingAnotherIsRefused) {
  auto st = statement(declText(3), 3);
  st.pushedBy = trust::OperatorKey::generate().publicKey().text();
  EXPECT_NE(refusal(value(st, declText(3))).find("but is signed by"), std::string::npos);
}

TEST_F(FleetAccept, ADeclarationWhoseOwnSerialIsNotTheStatementsIsRefused) {
  const auto st = statement(declText(4), 5);
  EXPECT_NE(
      refusal(value(st, declText(4))).find("own serial (4) is not the signed statement's (5)"),
      std::string::npos);
}

TEST_F(FleetAccept, ReplaysAreRefusedOnTheSignedSerialDigestAndPushTime) {
  const auto four = statement(declText(4), 4);
  const ReplayFloor floor{4, four.declarationDigest};
  EXPECT_NE(
      refusal(value(statement(declText(3), 3), declText(3)), floor).find("older than serial 4"),
      std::string::npos);
  // The same serial with other content.
  EXPECT_NE(refusal(value(statement(declText(4, "y"), 4), declText(4, "y")), floor)
                .find("in force here with other content"),
            std::string::npos);
  // An older push of the very same declaration than the one in force.
  auto later = four;
  later.pushedAtMs = 2000;
  EXPECT_NE(refusal(value(four, declText(4)), floor, later).find("older than the one in force"),
            std::string::npos);
  // The same push again (etcd restored, say), a newer push of it, and a higher serial pass.
  EXPECT_EQ(refusal(value(four, declText(4)), floor, four), "");
  EXPECT_EQ(refusal(value(later, declText(4)), floor, four), "");
  EXPECT_EQ(refusal(value(statement(declText(5), 5), declText(5)), floor, four), "");
  // At the highest serial there is, no message overflows.
  const auto max = std::numeric_limits<int64_t>::max();
  EXPECT_NE(refusal(value(statement(declText(3), 3), declText(3)), {max, ""})
                .find("no serial is higher than"),
            std::string::npos);
}

TEST_F(FleetAccept, BytesStoredByDigestAreFetchedByTheSignedDigest) {
  const auto st = statement(declText(3), 3);
  fleet::PushedDeclaration p;
  p.statement = fleet::encodeStatement(st);
  p.signature = trust::signatureText(key, p.statement);
  const std::string v = fleet::encodePushed(p);  // no bytes inline
  std::string asked;
  const auto a = acceptPushed(v, 7, "k", o, {}, std::nullopt,
                              [&](const std::string& digest) -> std::optional<std::string> {
                                asked = digest;
                                return declText(3);
                              });
  EXPECT_EQ(asked, st.declarationDigest);
  EXPECT_EQ(fleet::decodePushed(a.envelope, "k").text, declText(3)) << "the cache holds them";
  EXPECT_THROW(acceptPushed(v, 7, "k", o, {}, std::nullopt,
                            [](const std::string&) { return std::optional<std::string>(); }),
               InputError);
  EXPECT_THROW(acceptPushed(v, 7, "k", o, {}, std::nullopt,
                            [](const std::string&) { return std::optional(declText(3, "evil")); }),
               InputError);
}

TEST_F(FleetAccept, TheOldFormatIsRefusedSayingSo) {
  EXPECT_NE(refusal(R"({"declaration": "serial = 3\n", "signature": "", "serial": 3})")
                .find("format before signed statements"),
            std::string::npos);
}

}  // namespace
}  // namespace mesh::agent
