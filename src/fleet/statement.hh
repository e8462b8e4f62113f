// The operator-signed statement: everything a node acts on when it takes a pushed
// declaration, in one signed text. An etcd writer can copy, delete or withhold what
// etcd holds, but cannot make a node act on anything the operator did not sign:
//
//   - the statement binds the declaration's digest, the cluster, the node selector
//     (names and globs as pushed), the serial, the push time, the pushing key and the
//     rollout options (max-parallel-restarts);
//   - a node refuses a statement for another cluster, or whose selector does not
//     match its name (a statement copied from another node's key), or whose
//     declaration bytes do not have the signed digest;
//   - replay checks (node and `fleet push`) use the signed serial only.
//
// The value at /mesh/<cluster>/nodes/<node>/declaration is a PushedDeclaration: the
// statement's exact bytes, the detached signature over them, and the declaration's
// bytes. docs/fleet.md describes the format and the threat model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trust/operator_key.hh"

namespace mesh::fleet {

// What the operator pushed to: node names and fnmatch globs, as given.
struct Selector {
  std::vector<std::string> items;  // in the order given, each a name or a glob

  static bool isGlob(std::string_view item);
  // Splits each value at commas; names are checked (checkFleetName naming `option`),
  // globs kept as they are. Throws InputError for an empty item.
  void add(const std::string& value, const std::string& option);
  std::vector<std::string> names() const;
  std::vector<std::string> globs() const;
  bool matches(const std::string& node) const;
  std::string text() const;  // "web-*, db1"
  bool operator==(const Selector&) const = default;
};

inline constexpr std::string_view kStatementType = "mesh-host fleet statement v1";

struct Statement {
  std::string cluster;
  Selector selector;
  std::string declarationDigest;    // "sha256:<hex>" of the declaration's exact bytes
  int64_t serial = 0;               // the declaration's own serial
  int64_t pushedAtMs = 0;           // unix ms
  std::string pushedBy;             // "mesh-op:…": must be the key that signed it
  int64_t maxParallelRestarts = 0;  // 0: no limit
  bool operator==(const Statement&) const = default;
};

// The bytes that are signed: a JSON object with sorted keys and a "type" naming the
// format, so that no other signed text (a declaration, a node status) can pass for one.
std::string encodeStatement(const Statement& s);
// Throws InputError naming `where` when `text` is not a statement.
Statement decodeStatement(std::string_view text, const std::string& where);

// The value of a node's declaration key: the statement and its signature. `fleet push`
// stores the declaration's bytes once by digest (FleetKeys::body); a value may also
// carry them inline (the node's cached copy does), checked against the digest alike.
struct PushedDeclaration {
  std::string statement;  // the signed statement's exact bytes
  std::string signature;  // "mesh-sig:…" over `statement` (trust/signing.hh)
  std::string text;       // the declaration's exact bytes, "" when stored by digest
};

std::string encodePushed(const PushedDeclaration& p);
// Throws InputError naming `where` when `json` is not a pushed declaration; a value in
// the format before signed statements (a "declaration" with no "statement") says so.
PushedDeclaration decodePushed(std::string_view json, const std::string& where);

// What a pushed declaration's statement says, unverified: for display (`fleet status`)
// only. Whoever acts on it verifies the signature first (verifyStatement).
Statement peekStatement(const PushedDeclaration& p, const std::string& where);

// The checks every reader that acts on a pushed declaration makes, in this order: the
// signature over the statement is by a key in `trusted`, the statement decodes, its
// pushed_by is that signer, and the declaration's bytes (p.text, which must be filled
// in: see FleetKeys::body) have its digest. Throws InputError naming `where` (and what
// to do) for the first that fails.
Statement verifyStatement(const PushedDeclaration& p, const std::string& where,
                          const std::vector<trust::OperatorPublicKey>& trusted);
// The same without the digest check, for a value whose bytes are stored by digest: the
// signed digest says which body to fetch (then verifyStatement with it filled in).
Statement verifySignedStatement(const PushedDeclaration& p, const std::string& where,
                                const std::vector<trust::OperatorPublicKey>& trusted);

// "sha256:<hex>" of a value as etcd holds it: names one exact pushed value (a refusal
// says which one it refused).
std::string valueDigest(std::string_view value);
// "sha256:9f2c1a2b3c4d": a digest cut to 12 hex digits, for tables and messages.
std::string shortDigest(const std::string& digest);

}  // namespace mesh::fleet
