#include "agent/service_look.hh"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "apply/process_info.hh"
#include "state/state_dir.hh"
#include "supervise/builtin/unit_config.hh"
#include "util/accounts.hh"

namespace mesh::agent {

namespace {

std::string replaceAll(std::string value, const std::string& what, const std::string& with) {
  for (size_t at = 0; (at = value.find(what, at)) != std::string::npos; at += with.size())
    value.replace(at, what.size(), with);
  return value;
}

const std::string* unitValue(const decl::ProcessSpec& s, const char* key) {
  auto it = s.unit.find(key);
  return it == s.unit.end() || it->second.empty() ? nullptr : &it->second.back();
}

// The process's User= as a uid and its primary gid; nullopt: the agent's own. Throws
// Error when it names no account.
std::optional<std::pair<uid_t, gid_t>> runAs(const decl::ProcessSpec& s, const std::string& root) {
  const std::string* user = unitValue(s, "User");
  if (!user || user->empty()) return std::nullopt;
  std::optional<std::pair<uid_t, gid_t>> out;
  if (root != "/")
    if (auto e = readUser(root, *user)) out = std::pair{e->uid, e->gid};
  if (!out) {
    std::vector<char> buf(4096);
    passwd pw{}, *found = nullptr;
    const bool numeric = user->find_first_not_of("0123456789") == std::string::npos;
    const int rc = numeric ? ::getpwuid_r(static_cast<uid_t>(std::stoul(*user)), &pw, buf.data(),
                                          buf.size(), &found)
                           : ::getpwnam_r(user->c_str(), &pw, buf.data(), buf.size(), &found);
    if (rc == 0 && found)
      out = std::pair{found->pw_uid, found->pw_gid};
    else if (numeric)
      out = std::pair{static_cast<uid_t>(std::stoul(*user)), static_cast<gid_t>(std::stoul(*user))};
  }
  if (!out) throw Error("its User={} is no account on this node", *user);
  if (out->first == ::geteuid()) return std::nullopt;
  return out;
}

}  // namespace

std::vector<WatchedService> watchedServices(const decl::Declaration& d, const std::string& stateDir,
                                            const std::string& root) {
  std::vector<WatchedService> out;
  const std::string rootPrefix = root == "/" ? "" : root;
  for (const auto& r : d.resources) {
    if (r.kind != decl::Kind::Process && r.kind != decl::Kind::Service) continue;
    WatchedService w;
    w.id = r.id;
    const auto* p = std::get_if<decl::ProcessSpec>(&r.spec);
    w.unit = p ? p->service : std::get<decl::ServiceSpec>(r.spec).unit;
    if (p && p->health) {
      w.interval = std::chrono::milliseconds(p->health->intervalMs);
      try {
        const std::string exec =
            replaceAll(replaceAll(p->health->exec, "{bundle}",
                                  state::StateDir{stateDir}.bundle(p->bundle.hex())),
                       "{root}", rootPrefix);
        Probe probe;
        probe.argv = supervise::builtin::splitWords(exec);
        if (probe.argv.empty()) throw Error("its health exec is empty");
        probe.timeout = std::chrono::milliseconds(p->health->timeoutMs);
        if (auto as = runAs(*p, root)) {
          probe.uid = as->first;
          probe.gid = as->second;
        }
        w.probe = std::move(probe);
      } catch (const std::exception& e) {
        w.probeError = std::string("cannot run the check: ") + e.what();
      }
    } else if (p) {
      const std::string* type = unitValue(*p, "Type");
      w.notify = type && *type == "notify";
    }
    out.push_back(std::move(w));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

void countRestarts(std::vector<WatchedService>& services, state::Store& store) {
  for (auto& w : services) {
    w.restarts = w.crashRestartsBefore = 0;
    if (auto rec = store.record(w.id))
      if (auto info =
              rec->kind == "service" ? apply::serviceInfo(*rec) : apply::processInfo(*rec)) {
        w.restarts = info->restarts;
        w.crashRestartsBefore = info->crashRestartsBefore;
      }
  }
}

void seeRun(HealthTrack& t, const WatchedService& w, const supervise::ServiceState& st,
            WatchClock::time_point now) {
  const int64_t run = st.running ? st.sinceUs : 0;
  if (run == t.runSinceUs && st.running == t.running) return;
  t.runSinceUs = run;
  t.running = st.running;
  t.passed = false;
  t.runSeen = now;
  t.due = now;
  t.reason.clear();
  if (!w.checked()) {
    t.health.clear();
  } else if (w.notify) {
    // Type=notify: running (active, not activating) only once READY=1 came.
    t.health = st.running ? "healthy" : "starting";
  } else if (!w.probeError.empty()) {
    t.health = "unhealthy";
    t.reason = w.probeError;
  } else {
    t.health = "starting";
  }
}

void checked(HealthTrack& t, const WatchedService& w, int64_t runSinceUs, const ProbeResult& r,
             WatchClock::time_point now) {
  if (runSinceUs != t.runSinceUs || !t.running) return;
  t.due = now + w.interval;
  if (r.passed) {
    t.passed = true;
    t.health = "healthy";
    t.reason.clear();
    return;
  }
  t.reason = r.reason;
  if (t.passed || now - t.runSeen >= w.interval * kStartingIntervals) t.health = "unhealthy";
}

fleet::NodeStatus::Service serviceStatus(const WatchedService& w, const supervise::ServiceState& st,
                                         const HealthTrack& t) {
  return {.id = w.id,
          .unit = w.unit,
          .running = st.running,
          .upSinceMs = st.running ? st.sinceUs / 1000 : 0,
          .restartsByMeshHost = w.restarts,
          .restartsByCrash = w.crashRestartsBefore + st.crashRestarts,
          .health = w.checked() ? t.health : std::string(),
          .healthReason = w.checked() ? t.reason : std::string()};
}

}  // namespace mesh::agent
