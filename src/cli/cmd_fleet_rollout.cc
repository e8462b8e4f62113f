// `mesh-host fleet push --canary …` and `fleet rollout status|resume|abort`: parse the
// options and print; the rollout itself is fleet/rollout.hh. Behaviour and output:
// docs/fleet.md ("Rollouts").
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/output.hh"
#include "cli/time_text.hh"
#include "fleet/rollout.hh"
#include "fleet/view.hh"
#include "fleet/view/json.hh"
#include "util/duration.hh"
#include "util/error.hh"
#include "util/json_schema.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

void FleetRolloutOptions::addTo(CLI::App& cmd) {
  cmd.add_option("ACTION", action,
                 "status: the cluster's rollout; resume: drive it on (after its driver died, or "
                 "after a halt: continue anyway); abort: stop it")
      ->check(CLI::IsMember({"status", "resume", "abort"}))
      ->required();
  cmd.add_option("--key", key, "the operator key file (resume, abort)")->option_text("FILE");
  cmd.add_flag("--revert", revert,
               "abort: the nodes the rollout reached get their previous declaration back, with "
               "a new serial");
  cmd.add_option("--lock-timeout", lockTimeout,
                 "how long resume waits for a driver that died to let go of the rollout, and "
                 "abort for the push lock (default 30s)")
      ->option_text("DURATION")
      ->default_str("30s");
}

namespace {

void sayLine(const std::string& line) {
  printLine(line);
  std::fflush(stdout);  // each wave as it happens
}

void warnLine(const std::string& line) {
  printLine("mesh-host: " + line, stderr);
  std::fflush(stderr);
}

fleet::RolloutEvents events(bool json) {
  fleet::RolloutEvents e;
  if (!json) e.say = sayLine;
  e.warn = warnLine;
  return e;
}

int exitOf(const fleet::RolloutRecord& r) {
  return r.state == fleet::RolloutState::Done || r.state == fleet::RolloutState::Running
             ? kExitOk
             : kExitFailed;
}

int answer(const FleetOptions& f, const fleet::RolloutRecord& r) {
  if (f.json)
    std::puts(jsonOut(nlohmann::json{{"schema", kJsonSchema},
                                     {"cluster", f.cluster},
                                     {"rollout", fleet::rolloutJson(r)}})
                  .c_str());
  else
    sayLine(fleet::rolloutLine(r));
  return exitOf(r);
}

std::vector<trust::OperatorPublicKey> trustedOf(const FleetOptions& f) {
  if (f.trust.trust.empty()) return {};
  return f.trust.load();
}

std::string ms(int64_t v) {
  return formatDuration(Millis(v));
}

int showStatus(const FleetOptions& f) {
  fleet::EtcdClient client(etcdConfigOf(f));
  const auto trusted = trustedOf(f);
  const auto e = fleet::readRollout(client, keysOf(f), trusted);
  if (f.json) {
    auto j = fleet::rolloutJson(e ? std::optional(e->record) : std::nullopt);
    if (e && !j.is_null()) j["verified"] = e->verified ? nlohmann::json(*e->verified) : nullptr;
    std::puts(
        jsonOut(nlohmann::json{{"schema", kJsonSchema}, {"cluster", f.cluster}, {"rollout", j}})
            .c_str());
    return e ? exitOf(e->record) : kExitOk;
  }
  if (!e) {
    printLine("no rollout in cluster " + f.cluster);
    return kExitOk;
  }
  const auto& r = e->record;
  printLine(shownText(fleet::rolloutLine(r)));
  printLine(shownText(
      fmt::format("declaration {} ({}), pushed by {} at {}{}", r.declaration,
                  fleet::shortDigest(r.digest), fleet::shortKey(r.pushedBy), isoTime(r.startedAtMs),
                  !e->verified ? "" : (*e->verified ? ", verified" : ", NOT VERIFIED"))));
  printLine(
      shownText(fmt::format("driven by {}, last written {}", r.driver, isoTime(r.updatedAtMs))));
  const auto& o = r.options;
  printLine(fmt::format("options: --canary {} --wave {} --min-healthy {} --healthy-deadline {}{}",
                        o.canary, shownText(o.wave), ms(o.minHealthyMs), ms(o.healthyDeadlineMs),
                        o.autoRevert ? " --auto-revert" : ""));
  for (std::size_t w = 0; w < r.waves.size(); ++w) {
    const auto i = static_cast<int64_t>(w);
    const char* where =
        i < r.wave ? "reached"
        : i == r.wave && r.state != fleet::RolloutState::Done
            ? (r.state == fleet::RolloutState::Running ? "in progress" : "stopped here")
        : i == r.wave ? "reached"
                      : "not reached";
    printLine(shownText(fmt::format("wave {}{}: {} [{}]", w + 1, w == 0 ? " (canary)" : "",
                                    fmt::join(r.waves[w], ", "), where)));
  }
  return exitOf(r);
}

}  // namespace

int runFleetRolloutPush(const FleetOptions& f, const FleetPushOptions& p,
                        fleet::PushRequest request) {
  if (p.canary == 0)
    throw InputError(
        "--wave, --min-healthy, --healthy-deadline and --auto-revert shape a rollout: give "
        "--canary N (how many nodes get the push first) with them");
  if (p.canary < 0) throw InputError("--canary {}: give 1 or more nodes", p.canary);
  if (!p.wait.empty())
    throw InputError(
        "--wait does not go with --canary: a rollout waits for every wave by itself "
        "(--min-healthy, --healthy-deadline)");
  if (!p.each.empty())
    throw InputError("--each does not go with --canary: a rollout pushes one declaration");
  fleet::RolloutRequest r;
  r.options.canary = p.canary;
  r.options.wave = p.wave.empty() ? "1" : p.wave;
  fleet::checkWaveSpec(r.options.wave);
  r.options.minHealthyMs =
      p.minHealthy.empty() ? 10'000 : parseDuration(p.minHealthy, "--min-healthy").count();
  r.options.healthyDeadlineMs =
      p.healthyDeadline.empty() ? 300'000
                                : parseDuration(p.healthyDeadline, "--healthy-deadline").count();
  if (r.options.healthyDeadlineMs <= r.options.minHealthyMs)
    throw InputError(
        "--healthy-deadline {} is not more than --min-healthy {}: no node could ever be "
        "healthy in time; give a longer deadline",
        ms(r.options.healthyDeadlineMs), ms(r.options.minHealthyMs));
  r.options.autoRevert = p.autoRevert;
  r.push = std::move(request);
  r.trusted = trustedOf(f);
  const auto key = trust::OperatorKey::load(p.key);
  auto config = etcdConfigOf(f);
  config.retryWithin = r.push.lockTimeout;
  fleet::EtcdClient client(config);
  return answer(f, fleet::startRollout(client, key, r, events(f.json)));
}

int runFleetRollout(const FleetOptions& f, const FleetRolloutOptions& o) {
  if (o.action == "status") {
    if (!o.key.empty() || o.revert)
      throw InputError("fleet rollout status takes no --key or --revert: it only reads");
    return showStatus(f);
  }
  if (o.revert && o.action != "abort") throw InputError("--revert goes with fleet rollout abort");
  if (o.key.empty())
    throw InputError("fleet rollout {}: give the operator key with --key FILE", o.action);
  const auto timeout = parseDuration(o.lockTimeout, "--lock-timeout");
  const auto key = trust::OperatorKey::load(o.key);
  auto config = etcdConfigOf(f);
  config.retryWithin = timeout;
  fleet::EtcdClient client(config);
  if (o.action == "resume")
    return answer(
        f, fleet::resumeRollout(client, key, f.cluster, trustedOf(f), timeout, events(f.json)));
  const auto r = fleet::abortRollout(client, key, f.cluster, o.revert, timeout, events(f.json));
  if (f.json) answer(f, r);
  return kExitOk;
}

}  // namespace mesh::cli
