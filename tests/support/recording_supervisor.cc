#include "recording_supervisor.hh"

#include <chrono>

#include "util/error.hh"

namespace mesh::test {

namespace {

int64_t nowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

// What the builtin backend throws when a service's supervisor does not answer in time.
[[noreturn]] void timedOut(const char* verb) {
  throw Error("the supervisor did not answer \"{}\" within 90 s", verb);
}

}  // namespace

void ServiceWorld::startNow(Service& s) {
  const int64_t ms = nowUs() / 1000;
  while (nowUs() / 1000 == ms) {
  }
  s.active = true;
  s.sinceUs = nowUs();
  s.startTick = ++tick;
  s.pid = ++pids;
}

std::map<std::string, supervise::ServiceState> RecordingSupervisor::observe(
    const std::vector<std::string>& names, bool) {
  if (w_.hangsNow()) timedOut("status");
  std::map<std::string, supervise::ServiceState> out;
  for (const auto& n : names) {
    const auto& s = w_.services[n];
    supervise::ServiceState st;
    st.installed = s.installed;
    st.installedText = s.text;
    st.active = s.active;
    st.activeState = s.active ? "active" : "inactive";
    st.pid = s.active ? s.pid : 0;
    st.sinceUs = s.active ? s.sinceUs : 0;
    out[n] = st;
  }
  return out;
}

void RecordingSupervisor::install(const supervise::Unit& unit) {
  ++w_.calls;
  auto& s = w_.services[unit.name];
  if (!s.installed || s.text != unit.text) w_.installTick[unit.name] = ++w_.tick;
  s.installed = true;
  s.text = unit.text;
}

void RecordingSupervisor::uninstall(const std::string& name) {
  ++w_.calls;
  w_.services[name].installed = false;
  w_.services[name].text.clear();
}

void RecordingSupervisor::start(const std::string& name) {
  ++w_.calls;
  const bool hung = w_.hangsNow();
  if (hung && !w_.hangDone) timedOut("start");
  auto& s = running(name);
  if (!s.active) w_.startNow(s);
  if (hung) timedOut("start");
}

void RecordingSupervisor::restart(const std::string& name) {
  ++w_.calls;
  const bool hung = w_.hangsNow();
  if (hung && !w_.hangDone) timedOut("restart");
  auto& s = running(name);
  const uint64_t prev = s.active ? s.startTick : 0;
  w_.startNow(s);
  if (prev) w_.restarts.push_back({name, prev, s.startTick});
  if (hung) timedOut("restart");
}

void RecordingSupervisor::stop(const std::string& name) {
  ++w_.calls;
  const bool hung = w_.hangsNow();
  if (hung && !w_.hangDone) timedOut("stop");
  w_.services[name].active = false;
  if (hung) timedOut("stop");
}

void RecordingSupervisor::reloadService(const std::string& name) {
  ++w_.calls;
  auto& s = running(name);
  if (!s.active) throw Error("sim: reload of {}: it is not running", name);
  s.reloadTick = ++w_.tick;
  w_.reloads.push_back({name, s.startTick, s.reloadTick});
}

supervise::ForeignUnit RecordingSupervisor::observeForeign(const std::string& name) {
  if (w_.hangsNow()) timedOut("status");
  supervise::ForeignUnit f;
  const auto& s = w_.services[name];
  f.loadState = s.vendor ? "loaded" : "not-found";
  if (!s.vendor) return f;
  f.fragmentPath = "/lib/systemd/system/" + name;
  f.enableLinks = {"multi-user.target.wants/" + name};
  f.enabled = s.enabled;
  f.dropin = s.dropin;
  return f;
}

void RecordingSupervisor::setDropin(const std::string& name,
                                    const std::optional<std::string>& text) {
  ++w_.calls;
  auto& s = w_.services[name];
  if (s.dropin != text) w_.installTick[name] = ++w_.tick;
  s.dropin = text;
}

void RecordingSupervisor::setEnabled(const std::string& name, const supervise::ForeignUnit&,
                                     bool enabled) {
  ++w_.calls;
  w_.services[name].enabled = enabled;
}

ServiceWorld::Service& RecordingSupervisor::running(const std::string& name) {
  auto& s = w_.services[name];
  if (!s.installed) throw Error("sim: {} is not installed", name);
  if (w_.failNext > 0) {
    --w_.failNext;
    throw Error("sim: the supervisor failed to start {}", name);
  }
  return s;
}

}  // namespace mesh::test
