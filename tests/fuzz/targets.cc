// The fuzz targets: every decoder of bytes mesh-host did not write itself, or that
// someone else could have changed — the declaration parser, the compiled form in the
// state store, each etcd value (statement, pushed declaration, status, enrollment,
// heartbeat, push record, chunked body manifest), the notify socket's datagrams and a
// tree's record (an archive's manifest and fingerprints, read back from the store).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "apply/kinds/tree.hh"
#include "apply/plan_file.hh"
#include "decl/compiled.hh"
#include "decl/parse.hh"
#include "fleet/bodies.hh"
#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "fleet/push_history.hh"
#include "fleet/statement.hh"
#include "fuzz.hh"
#include "supervise/builtin/notify_socket.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "trust/sealed.hh"
#include "util/error.hh"

namespace mesh::fuzz {

namespace {

const std::vector<std::string> kJsonTokens = {
    "{",        "}",           "[",        "]",        ",",
    ":",        "\"",          "\\u0000",  "\\ud800",  "null",
    "true",     "-1",          "1e400",    "\"type\"", "\"signature\"",
    "\"node\"", "\"cluster\"", "[[[[[[[[", "{\"a\":"};

const std::vector<std::string> kTomlTokens = {"[",
                                              "]",
                                              "[[",
                                              "]]",
                                              "{",
                                              "}",
                                              ".",
                                              "=",
                                              "\"",
                                              "'",
                                              "\"\"\"",
                                              "'''",
                                              "\n",
                                              "#",
                                              ",",
                                              "[module.m.file.f]\n",
                                              "path = \"/etc/x\"\n",
                                              "content = \"x\"\n",
                                              "a.b.c.d = 1\n",
                                              "mode = \"0644\"\n",
                                              "requires = [\"m.f\"]\n",
                                              "owner = \"root\"\n",
                                              "\\u0000",
                                              "1979-05-27"};

// The declaration an honest operator writes: every kind appears in the corpus files;
// this one is here so the target has a seed even without them.
const char* kDecl = R"([module.web.file.conf]
path = "/etc/web/conf"
content = "listen = 80\n"
mode = "0640"

[module.web.directory.data]
path = "/srv/web"
owner = "root"
)";

// Regression seeds: what crashed before (nesting that overflowed the stack).
std::string deepJson() {
  constexpr int n = 300000;
  return R"({"node":"web-1","cluster":"prod","type":"x","x":)" + std::string(n, '[') +
         std::string(n, ']') + R"(,"signature":"s"})";
}

std::vector<std::string> withDeep(std::vector<std::string> seeds) {
  seeds.push_back(deepJson());
  return seeds;
}

decl::ParseOptions options() {
  decl::ParseOptions o;
  o.node = "node-1";
  o.stateDir = "/var/lib/mesh-host";
  return o;
}

// The compiled form of what `in` parses to, or the error it gets.
std::string outcomeOf(std::string_view in, bool inPieces) {
  auto o = options();
  o.inPieces = inPieces;
  try {
    return decl::compileDeclaration(decl::parseDeclaration(in, "fuzz.toml", o));
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

bool parseDecl(std::string_view in) {
  try {
    auto d = decl::parseDeclaration(in, "fuzz.toml", options());
    // What parses compiles, and the form loads back to as many resources.
    const std::string form = decl::compileDeclaration(d);
    auto back = decl::loadCompiled(form, d.digest, options());
    if (!back) fail("a parsed declaration's compiled form does not load");
    if (back->resources.size() != d.resources.size()) fail("the compiled form lost resources");
  } catch (const Error&) {
  }
  // Parsed a resource at a time or whole, the same declaration or the same error.
  const std::string pieces = outcomeOf(in, true);
  if (pieces != outcomeOf(in, false))
    fail("parsed a resource at a time, the declaration is not what it is parsed whole");
  return !pieces.starts_with("error: ");
}

std::vector<std::string> declSeeds() {
  std::string dotted = "a", header = "[a";
  for (int k = 0; k < 50000; ++k) dotted += ".a", header += ".a";
  return {kDecl, dotted + " = 1\n", header + "]\n", "x = " + std::string(100000, '[')};
}

// The compiled form, read a piece at a time as from the store: decoded before its
// checksum is known, so every mutation reaches the decoder.
bool loadForm(std::string_view in) {
  decl::FormSource src;
  src.size = in.size();
  src.read = [in](size_t offset, char* out, size_t n) {
    if (offset > in.size() || n > in.size() - offset) return false;
    std::memcpy(out, in.data() + offset, n);
    return true;
  };
  try {
    const auto d = decl::loadCompiled(src, Digest::ofBytes(kDecl), options());
    const auto flat = decl::loadCompiled(in, Digest::ofBytes(kDecl), options());
    if (d.has_value() != flat.has_value()) fail("the two compiled-form readers disagree");
    return d.has_value();
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> formSeeds() {
  auto d = decl::parseDeclaration(kDecl, "fuzz.toml", options());
  return {decl::compileDeclaration(d)};
}

bool statement(std::string_view in) {
  bool ok = false;
  try {
    fleet::decodeStatement(in, "fuzz");
    ok = true;
  } catch (const Error&) {
  }
  try {
    auto p = fleet::decodePushed(in, "fuzz");
    fleet::peekStatement(p, "fuzz");
    ok = true;
  } catch (const Error&) {
  }
  return ok;
}

std::vector<std::string> statementSeeds() {
  fleet::Statement s;
  s.cluster = "prod";
  s.selector.add("web-*,db1", "--nodes");
  s.declarationDigest = Digest::ofBytes(kDecl).str();
  s.serial = 7;
  s.pushedAtMs = 1700000000000;
  s.pushedBy = trust::OperatorKey::generate().publicKey().text();
  s.maxParallelRestarts = 2;
  const std::string text = fleet::encodeStatement(s);
  return {text, fleet::encodePushed({text, "mesh-sig:AAAA", kDecl})};
}

const trust::NodeKey& nodeKey() {
  static const trust::NodeKey key = trust::NodeKey::ephemeral();
  return key;
}

bool status(std::string_view in) {
  bool ok = false;
  try {
    fleet::decodeStatus(in, "fuzz");
    ok = true;
  } catch (const Error&) {
  }
  try {
    nlohmann::json parsed;
    fleet::checkNodeJson(in, nodeKey().publicKey(), &parsed);
    fleet::SignedFor whom;
    fleet::checkNodeJson(in, nodeKey().publicKey(), whom);
  } catch (const Error&) {
  }
  return ok;
}

std::vector<std::string> statusSeeds() {
  fleet::NodeStatus s;
  s.node = "web-1";
  s.cluster = "prod";
  s.version = "1.0";
  s.pid = 42;
  s.generation = 3;
  s.serial = 7;
  s.declarationDigest = Digest::ofBytes(kDecl).str();
  s.cycle = 9;
  s.failed = 1;
  s.failing = {{"web.conf", "cannot write /etc/web/conf: Permission denied"}};
  s.churning = {"web.data"};
  s.refused = fleet::NodeStatus::Refusal{12, 6, "older serial", 1700000000000, "", ""};
  s.services = {{"process:web", "web.service", true, 1700000000000, 2, 1, "unhealthy", "exit 1"}};
  const std::string text = fleet::encodeStatus(s);
  return {text, fleet::signNodeJson(text, nodeKey())};
}

// A sealed value as a node opens it: whatever the bytes, the answer is one of the
// results, an opened secret only with Opened, and a v2 value never claims more
// recipients than it may hold.
bool sealed(std::string_view in) {
  const trust::OpenedSealed o = trust::openSealedWith(nodeKey(), in);
  if ((o.result == trust::OpenedSealed::Result::Opened) != o.secret.has_value())
    fail("a secret without Opened, or Opened without a secret");
  if (o.recipients > trust::kMaxRecipients) fail("more recipients than a value may have");
  return o.result == trust::OpenedSealed::Result::Opened;
}

// v2 to this node alone and among others, v1 (crypto_box_seal of the secret alone, as an
// older mesh-host wrote it), and a v2 value this node is not in.
std::vector<std::string> sealedSeeds() {
  const trust::NodeKey other = trust::NodeKey::ephemeral();
  const std::string me = nodeKey().publicKeyText();
  const std::string secret = "db-password: s3cret";
  std::string v1box(secret.size() + crypto_box_SEALBYTES, '\0');
  const auto half = trust::sealingKeyOf(me);
  crypto_box_seal(reinterpret_cast<unsigned char*>(v1box.data()),
                  reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
                  half.data());
  std::string b64(sodium_base64_ENCODED_LEN(v1box.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(b64.data(), b64.size(), reinterpret_cast<const unsigned char*>(v1box.data()),
                    v1box.size(), sodium_base64_VARIANT_ORIGINAL);
  b64.resize(std::strlen(b64.c_str()));
  return {trust::sealToMany(Secret(secret), {me}),
          trust::sealToMany(Secret(secret), {other.publicKeyText(), me}),
          trust::sealToMany(Secret(secret), {other.publicKeyText()}),
          "sealed:" + b64,
          "sealed:v2:3:",
          "sealed:v2:0:AAAA"};
}

const trust::OperatorKey& operatorKey() {
  static const trust::OperatorKey key = trust::OperatorKey::generate();
  return key;
}

bool enrollment(std::string_view in) {
  try {
    fleet::verifyEnrollment(std::string(in), "prod", "web-1", {operatorKey().publicKey()}, "fuzz");
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> enrollmentSeeds() {
  return {fleet::encodeEnrollment("prod", "web-1", nodeKey().publicKey(), 1700000000000,
                                  operatorKey())};
}

bool heartbeat(std::string_view in) {
  try {
    fleet::decodeHeartbeat(in, "fuzz");
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> heartbeatSeeds() {
  const std::string text = fleet::encodeHeartbeat({"web-1", "prod", 42, 1700000000000, 77});
  return {text, fleet::signNodeJson(text, nodeKey())};
}

bool pushRecord(std::string_view in) {
  // Never throws for what the value holds (the entry says it), signed or not.
  auto e = fleet::readPushRecord("/mesh/prod/pushes/1", in, {operatorKey().publicKey()});
  auto f = fleet::readPushRecord("/mesh/prod/pushes/1", in, {});
  if (e.record.has_value() != f.record.has_value()) fail("a push record decodes two ways");
  return e.record.has_value();
}

std::vector<std::string> pushRecordSeeds() {
  fleet::PushRecord r;
  r.digest = Digest::ofBytes(kDecl).str();
  r.serial = 7;
  r.pushedBy = operatorKey().publicKey().text();
  r.pushedAtMs = 1700000000000;
  r.selector = "web-*";
  r.nodes = 3;
  r.pushed = 2;
  r.unchanged = 1;
  r.outcomes = fleet::PushRecord::Outcomes{2, 0, 0, 1};
  // And what threw type_error before: fields of other types.
  return {fleet::encodePushRecord(r, operatorKey()), R"({"record":1,"signature":2})",
          R"({"record":"{\"type\":1}"})"};
}

bool bodyManifest(std::string_view in) {
  try {
    return fleet::decodeBodyManifest(in, "/mesh/prod/declarations/x").has_value();
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> bodyManifestSeeds() {
  return {
      nlohmann::json{{"type", fleet::kChunkedBodyType}, {"size", 3000000}, {"chunks", 3}}.dump(),
      R"({"type":1})", R"({"type":"mesh-host chunked body v1","size":"1","chunks":1})"};
}

// A plan file (`plan --out`, applied later by `apply PLAN`): the operator's input.
bool planFile(std::string_view in) {
  try {
    apply::decodePlanFile(in, "fuzz.plan");
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> planFileSeeds() {
  return {R"({"type":1})", R"({"type":"mesh-host plan v1","resources":[[[[{}]]]]})"};
}

// A tree's record: what it reads is written back the same (a record is rewritten
// only when it changes), and no index reaches past the manifest.
bool treeObserved(std::string_view in) {
  const auto o = apply::TreeObserved::parse(in);
  if (!o.manifest) return false;
  for (const auto& [index, f] : o.cache.fingerprints)
    if (index >= o.manifest->entries.size()) fail("a fingerprint past the manifest");
  const auto again = apply::TreeObserved::parse(o.str());
  if (!again.manifest || again.manifest->entries != o.manifest->entries ||
      again.cache.fingerprints != o.cache.fingerprints || again.legacy)
    fail("a tree's record reads back otherwise");
  return true;
}

std::vector<std::string> treeObservedSeeds() {
  return {
      R"({"entries":3,"fingerprints":[[1,"1:2:3:4:5:100644:0:0"]],"manifest":{"entries":[)"
      R"({"mode":493,"path":"d","type":"dir"},)"
      R"({"digest":"sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",)"
      R"("mode":420,"path":"d/f","size":3,"type":"file"},)"
      R"({"path":"d/l","target":"f","type":"link"}],"version":1},"version":2})",
      R"({"fingerprints":[["d/f","1:2:3:4:5:100644:0:0"]],"manifest":"{\"entries\":[)"
      R"({\"digest\":\"sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\",)"
      R"(\"mode\":420,\"path\":\"d/f\",\"size\":3,\"type\":\"file\"}],\"version\":1}"})",
      R"({"entries":99999999999999,"fingerprints":[],"manifest":{"entries":[],"version":1},"version":2})"};
}

bool notifyMessage(std::string_view in) {
  const auto m = supervise::builtin::parseNotifyMessage(in);
  if (m.status && m.status->find('\n') != std::string::npos) fail("a STATUS= holds a newline");
  return m.ready || m.status.has_value();
}

std::vector<std::string> notifySeeds() {
  return {"READY=1\nSTATUS=up and running\n", "STATUS=loading\nMAINPID=42\n", "WATCHDOG=1",
          "BARRIER=1\n"};
}

}  // namespace

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "mesh-fuzz: the target's own check failed: %s\n", what);
  std::abort();  // mesh-fuzz's handler saves the input; libFuzzer saves it as crash-*
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"decl", parseDecl, declSeeds, kTomlTokens},
      {"compiled", loadForm, formSeeds, {std::string(1, '\0'), "\x01", "\xff\xff\xff\xff", "\x7f"}},
      {"statement", statement, [] { return withDeep(statementSeeds()); }, kJsonTokens},
      {"status", status, [] { return withDeep(statusSeeds()); }, kJsonTokens},
      {"enrollment", enrollment, [] { return withDeep(enrollmentSeeds()); }, kJsonTokens},
      {"heartbeat", heartbeat, [] { return withDeep(heartbeatSeeds()); }, kJsonTokens},
      {"push-record", pushRecord, [] { return withDeep(pushRecordSeeds()); }, kJsonTokens},
      {"body-manifest", bodyManifest, [] { return withDeep(bodyManifestSeeds()); }, kJsonTokens},
      {"plan-file", planFile, [] { return withDeep(planFileSeeds()); }, kJsonTokens},
      {"sealed", sealed, sealedSeeds, {"sealed:", "sealed:v2:", ":", "=", "AAAA", "99999999999"}},
      {"notify", notifyMessage, notifySeeds, {"READY=1", "STATUS=", "\n", "=", "\xff", "\x1b["}},
      {"tree-observed", treeObserved, [] { return withDeep(treeObservedSeeds()); }, kJsonTokens},
  };
  return all;
}

}  // namespace mesh::fuzz
