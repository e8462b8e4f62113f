// FleetLink: judging a pushed value — checked (envelope, signature, serial, TOML) and
// either accepted (handed to the agent, which cycles at once) or refused (the refusal
// shown in the node's status); the cached declaration checked again at start.
#include "agent/fleet_link.hh"

#include <fmt/format.h>

#include "agent/fleet_accept.hh"
#include "fleet/bodies.hh"
#include "state/store.hh"
#include "util/clock.hh"
#include "util/error.hh"

namespace mesh::agent {

namespace {

// etcd could not be asked for a declaration's bytes: no verdict on the value.
struct BodyUnavailable : Error {
  using Error::Error;
};

}  // namespace

AcceptedDeclaration FleetLink::check(const std::string& value, int64_t revision) {
  const std::string where = fmt::format("etcd:{}@{}", declarationKey_, revision);
  ReplayFloor floor{appliedSerial_, appliedDigest_};
  std::optional<fleet::Statement> inForce;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (inForce_) {
      inForce = inForce_->statement;
      if (!floor.serial || inForce->serial >= *floor.serial)
        floor = {inForce->serial, inForce->declarationDigest};
    }
  }
  // The declaration's bytes, stored once by digest (the loaded cache carries them inline).
  const BodyFetcher fetch = [this](const std::string& digest) -> std::optional<std::string> {
    try {
      return fleet::readBody(*slotsEtcd_, keys_, digest);  // whole or in chunks
    } catch (const InputError&) {
      throw;  // a manifest that does not add up: the value's fault, refused
    } catch (const Error& e) {
      throw BodyUnavailable(
          std::string(e.what()));  // etcd's fault, not the value's: judged again later
    }
  };
  return acceptPushed(value, revision, where, o_, floor, inForce, fetch);
}

std::optional<AcceptedDeclaration> FleetLink::loadCached() {
  std::optional<state::Store::FleetDeclaration> cached;
  try {
    auto store = state::Store::openIfExists(stateDir_);
    if (!store) return std::nullopt;
    cached = store->fleetDeclaration(declarationKey_);
  } catch (const std::exception& e) {
    log_.log(Level::Warning, std::string("cannot read the cached pushed "
                                         "declaration: ") +
                                 e.what());
    return std::nullopt;
  }
  if (!cached) return std::nullopt;
  try {
    auto a = check(cached->envelope, cached->revision);
    std::lock_guard<std::mutex> guard(mutex_);
    // Named as etcd holds it: the statement and signature, the bytes stored by digest.
    auto asPut = fleet::decodePushed(cached->envelope, declarationKey_);
    asPut.text.clear();
    inForce_ = InForce{a.statement, fleet::valueDigest(fleet::encodePushed(asPut))};
    lastJudged_ = inForce_->value;
    return a;
  } catch (const Error& e) {
    if (std::string(e.what()).find("before signed statements") != std::string::npos) {
      // Decided: an old-format cache is not converted; the node takes what etcd holds.
      log_.info(fmt::format(
          "the cached pushed declaration (revision {}) is in the format before signed "
          "statements; not using it: the node takes its declaration from etcd (push it again "
          "with this mesh-host if etcd holds the old format too)",
          cached->revision));
      return std::nullopt;
    }
    log_.error(
        fmt::format("mesh-host: the cached pushed declaration (revision {}) no longer "
                    "passes, not using it: {}",
                    cached->revision, e.what()));
    return std::nullopt;
  }
}

void FleetLink::refuse(int64_t revision, const std::string& value, const std::string& reason) {
  log_.error("mesh-host: refused the pushed declaration: " + reason +
                 "\nmesh-host: the last accepted declaration stays in force",
             {{"revision", revision}, {"key", declarationKey_}});
  // What the statement claims, unverified: for the status only.
  std::optional<int64_t> serial;
  std::string digest;
  try {
    const auto st = fleet::peekStatement(fleet::decodePushed(value, declarationKey_), "");
    serial = st.serial;
    digest = st.declarationDigest;
  } catch (const Error&) {
  }
  std::lock_guard<std::mutex> guard(mutex_);
  refusal_ = fleet::NodeStatus::Refusal{
      revision, serial, reason, unixNowMs(), fleet::valueDigest(value), digest};
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::consider(const std::string& value, int64_t revision) {
  const std::string id = fleet::valueDigest(value);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (id == lastJudged_) return;  // judged already (a re-read after reconnecting)
    lastJudged_ = id;
  }
  try {
    auto a = check(value, revision);
    const auto& st = a.statement;
    log_.info(fmt::format("pushed declaration accepted: serial {} ({}), pushed by {} to {} "
                          "(revision {})",
                          st.serial, fleet::shortDigest(st.declarationDigest), st.pushedBy,
                          st.selector.text(), revision),
              {{"revision", revision},
               {"serial", st.serial},
               {"digest", st.declarationDigest},
               {"pushed_at_ms", st.pushedAtMs}});
    {
      std::lock_guard<std::mutex> guard(mutex_);
      inForce_ = InForce{st, id};
      pending_ = std::move(a);
      if (refusal_) {
        refusal_.reset();
        statusDirty_ = true;
        ++statusVersion_;
        changed_.notify_all();
      }
    }
    wake_();
  } catch (const BodyUnavailable&) {
    std::lock_guard<std::mutex> guard(mutex_);
    lastJudged_.clear();
    throw;                             // the watcher backs off and reads the key again
  } catch (const std::exception& e) {  // not only Error: bad data never ends the thread
    refuse(revision, value, e.what());
  }
}

}  // namespace mesh::agent
