// What a node accepts from its declaration key in etcd (fleet mode). The only input
// it trusts is the operator-signed statement (fleet/statement.hh); every rule below is
// on signed data, so that an etcd writer can withhold a push but not steer the node:
//
//   1. the value is a pushed declaration in the current format;
//   2. the statement is signed by a trusted operator key that it names as pushed_by;
//   3. it is for this node's cluster, and its selector (names and globs as pushed)
//      matches this node's name: a statement copied from another node's or cluster's
//      key is refused;
//   4. no replay: its serial is not below the floor (the highest serial this node
//      applied or accepted); at the floor it must be the same content, and not an
//      older push of it than the one in force;
//   5. the declaration's bytes (inline, or stored once by digest and fetched by the
//      signed digest) have the signed digest;
//   6. the declaration parses and validates as `apply` would a file, and its own serial
//      is the statement's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "agent/fleet_link.hh"
#include "fleet/statement.hh"
#include "trust/replay.hh"

namespace mesh::agent {

// The replay floor: the highest serial this node applied or accepted, and the digest
// of that declaration ("" unknown).
using ReplayFloor = trust::ReplayFloor;

// The declaration bytes of a "sha256:…" digest as etcd stores them once
// (FleetKeys::body); nullopt when they are not there.
using BodyFetcher = std::function<std::optional<std::string>(const std::string& digest)>;

// Checks `value` (read at `revision`, named `where` in errors) against the rules
// above; throws InputError saying which failed and what to do. A value without the
// declaration's bytes has them fetched by its signed digest (`fetch`, after the
// signature is checked). The accepted envelope carries the bytes inline (for the cache).
AcceptedDeclaration acceptPushed(const std::string& value, int64_t revision,
                                 const std::string& where, const FleetOptions& options,
                                 const ReplayFloor& floor,
                                 const std::optional<fleet::Statement>& inForce,
                                 const BodyFetcher& fetch = {});

}  // namespace mesh::agent
