#include "agent/fleet_accept.hh"

#include <limits>

#include <fmt/format.h>

#include "util/error.hh"

namespace mesh::agent {

namespace {

std::string higherThan(int64_t serial) {
  if (serial == std::numeric_limits<int64_t>::max())
    return fmt::format("no serial is higher than {}", serial);
  return fmt::format("push serial {} or more", serial + 1);
}

void checkReplay(const fleet::Statement& st, const std::string& where, const ReplayFloor& floor,
                 const std::optional<fleet::Statement>& inForce) {
  switch (trust::judgeReplay(st.serial, st.declarationDigest, floor)) {
    case trust::Replay::Newer:
    case trust::Replay::Unserialed:  // a statement always has a serial
      return;
    case trust::Replay::Older:
      throw InputError(
          "{}: serial {} is older than serial {} this node already has; a replayed declaration "
          "is refused ({})",
          where, st.serial, *floor.serial, higherThan(*floor.serial));
    case trust::Replay::Conflict:
      throw InputError(
          "{}: serial {} is in force here with other content ({}, not {}); a second declaration "
          "with the same serial is refused ({})",
          where, st.serial, fleet::shortDigest(floor.digest),
          fleet::shortDigest(st.declarationDigest), higherThan(st.serial));
    case trust::Replay::Same:
      if (inForce && inForce->serial == st.serial && st.pushedAtMs < inForce->pushedAtMs)
        throw InputError(
            "{}: this push of serial {} (at {} ms) is older than the one in force (at {} ms); a "
            "replayed push is refused",
            where, st.serial, st.pushedAtMs, inForce->pushedAtMs);
      return;
  }
}

}  // namespace

AcceptedDeclaration acceptPushed(const std::string& value, int64_t revision,
                                 const std::string& where, const FleetOptions& options,
                                 const ReplayFloor& floor,
                                 const std::optional<fleet::Statement>& inForce,
                                 const BodyFetcher& fetch) {
  auto pushed = fleet::decodePushed(value, where);
  // Signed, and for this node, before anything is fetched or parsed.
  const auto st = fleet::verifySignedStatement(pushed, where, options.trusted);
  if (st.cluster != options.cluster)
    throw InputError(
        "{}: the statement is for cluster {} and this node is in cluster {} (copied from "
        "another cluster's key?)",
        where, st.cluster, options.cluster);
  if (!st.selector.matches(options.node))
    throw InputError(
        "{}: the statement is for nodes {} and this node is {} (copied from another node's "
        "key?); push to this node to change it",
        where, st.selector.text(), options.node);
  checkReplay(st, where, floor, inForce);
  if (pushed.text.empty()) {
    auto body = fetch ? fetch(st.declarationDigest) : std::nullopt;
    if (!body)
      throw InputError(
          "{}: the declaration {} it names is not stored in etcd; push it again with mesh-host "
          "fleet push",
          where, fleet::shortDigest(st.declarationDigest));
    pushed.text = std::move(*body);
  }
  fleet::verifyStatement(pushed, where, options.trusted);  // the bytes have the signed digest
  AcceptedDeclaration a{options.parse(pushed.text, where), fleet::encodePushed(pushed), revision,
                        st.maxParallelRestarts, st};
  if (a.declaration.serial != st.serial)
    throw InputError("{}: the declaration's own serial ({}) is not the signed statement's ({})",
                     where, a.declaration.serial ? std::to_string(*a.declaration.serial) : "none",
                     st.serial);
  return a;
}

}  // namespace mesh::agent
