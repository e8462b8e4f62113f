#include "supervise/systemd/manager.hh"

#include <cstdlib>
#include <cstring>

#include "util/digest.hh"

namespace mesh::supervise::sdbus {

namespace {

constexpr const char* kDest = "org.freedesktop.systemd1";
constexpr const char* kPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
// A daemon-reload re-reads every unit; on a large machine it can take a while.
constexpr uint64_t kReloadTimeoutUs = 120ull * 1000 * 1000;

std::string shownSystemBus() {
  const char* env = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  if (env && *env) return env;
  return "unix:path=/run/dbus/system_bus_socket";
}

std::string iface(const char* shortName) {
  return std::string("org.freedesktop.systemd1.") + shortName;
}

}  // namespace

std::unique_ptr<Manager> Manager::connect(const std::string& address) {
  std::unique_ptr<Manager> m(new Manager());
  const std::string shown = address.empty() ? shownSystemBus() : address;
  auto unreachable = [&](const std::string& why) {
    return InputError(
        "--supervisor systemd: cannot reach systemd over D-Bus ({}): {}; systemd must run as "
        "PID 1 with its D-Bus system bus up (or point DBUS_SYSTEM_BUS_ADDRESS at it), "
        "otherwise use --supervisor builtin",
        shown, why);
  };
  sd_bus* raw = nullptr;
  int r = 0;
  if (address.empty()) {
    r = sd_bus_open_system(&raw);
    m->bus_.reset(raw);
  } else {
    r = sd_bus_new(&raw);
    m->bus_.reset(raw);
    if (r >= 0) r = sd_bus_set_address(raw, address.c_str());
    if (r >= 0) r = sd_bus_set_bus_client(raw, 1);
    if (r >= 0) r = sd_bus_start(raw);
  }
  if (r < 0) throw unreachable(std::strerror(-r));
  // Connecting is lazy (Hello goes out with the first call): ask the manager
  // something so a bus without systemd on it fails here, not in the first cycle.
  try {
    m->version_ = m->getString(kPath, "Manager", "Version");
  } catch (const BusError& e) {
    throw unreachable(e.what());
  }
  return m;
}

std::vector<UnitListing> Manager::listUnitsByNames(const std::vector<std::string>& names) {
  std::vector<UnitListing> out;
  if (names.empty()) return out;
  sd_bus_message* raw = nullptr;
  check(
      sd_bus_message_new_method_call(bus_.get(), &raw, kDest, kPath, kManager, "ListUnitsByNames"),
      "cannot build ListUnitsByNames");
  MessagePtr call(raw);
  std::vector<char*> strv;
  for (const auto& n : names) strv.push_back(const_cast<char*>(n.c_str()));
  strv.push_back(nullptr);
  check(sd_bus_message_append_strv(call.get(), strv.data()), "cannot build ListUnitsByNames");
  CallError err;
  sd_bus_message* rawReply = nullptr;
  int r = sd_bus_call(bus_.get(), call.get(), 0, err.get(), &rawReply);
  if (r < 0) err.raise(r);
  MessagePtr reply(rawReply);
  check(sd_bus_message_enter_container(reply.get(), 'a', "(ssssssouso)"),
        "cannot read ListUnitsByNames");
  for (;;) {
    const char *name, *description, *load, *active, *sub, *following, *path, *jobType, *jobPath;
    uint32_t jobId = 0;
    r = check(sd_bus_message_read(reply.get(), "(ssssssouso)", &name, &description, &load, &active,
                                  &sub, &following, &path, &jobId, &jobType, &jobPath),
              "cannot read ListUnitsByNames");
    if (r == 0) break;
    out.push_back({name, load, active, sub, path});
  }
  return out;
}

void Manager::reload() {
  sd_bus_message* raw = nullptr;
  check(sd_bus_message_new_method_call(bus_.get(), &raw, kDest, kPath, kManager, "Reload"),
        "cannot build Reload");
  MessagePtr call(raw);
  CallError err;
  sd_bus_message* rawReply = nullptr;
  int r = sd_bus_call(bus_.get(), call.get(), kReloadTimeoutUs, err.get(), &rawReply);
  MessagePtr reply(rawReply);
  if (r < 0) err.raise(r);
}

void Manager::subscribe() {
  if (subscribed_) return;
  // The match first (AddMatch is synchronous), then Subscribe: systemd only
  // broadcasts job signals while some client is subscribed.
  sd_bus_slot* slot = nullptr;
  check(sd_bus_match_signal(bus_.get(), &slot, kDest, kPath, kManager, "JobRemoved",
                            &Manager::onJobRemoved, this),
        "cannot watch systemd's jobs");
  jobRemovedSlot_.reset(slot);
  CallError err;
  int r = sd_bus_call_method(bus_.get(), kDest, kPath, kManager, "Subscribe", err.get(), nullptr,
                             nullptr);
  if (r < 0) err.raise(r);
  subscribed_ = true;
}

int Manager::onJobRemoved(sd_bus_message* m, void* self, sd_bus_error*) {
  auto* me = static_cast<Manager*>(self);
  uint32_t id = 0;
  const char *path = nullptr, *unit = nullptr, *result = nullptr;
  if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0) return 0;
  if (!me->waitingJob_.empty() && me->waitingJob_ == path) me->jobResult_ = result;
  return 0;
}

bool Manager::pumpUntil(std::chrono::steady_clock::time_point deadline) {
  if (check(sd_bus_process(bus_.get(), nullptr), "lost the connection to systemd") > 0) return true;
  auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return false;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  check(sd_bus_wait(bus_.get(), static_cast<uint64_t>(us)), "lost the connection to systemd");
  return true;
}

void Manager::pump(std::chrono::milliseconds d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  while (pumpUntil(deadline)) {
  }
}

std::string Manager::runJob(const char* method, const std::string& unit,
                            std::chrono::milliseconds timeout) {
  subscribe();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  CallError err;
  sd_bus_message* raw = nullptr;
  int r = sd_bus_call_method(bus_.get(), kDest, kPath, kManager, method, err.get(), &raw, "ss",
                             unit.c_str(), "replace");
  MessagePtr reply(raw);
  if (r < 0) err.raise(r);
  const char* job = nullptr;
  check(sd_bus_message_read(reply.get(), "o", &job), "cannot read the job systemd returned");
  // Signals are dispatched only in sd_bus_process, so a JobRemoved that arrived
  // while the call was in flight is still queued and will match.
  waitingJob_ = job;
  jobResult_.clear();
  struct Reset {
    Manager* m;
    ~Reset() { m->waitingJob_.clear(); }
  } reset{this};
  while (jobResult_.empty()) {
    if (!pumpUntil(deadline))
      throw Error(
          "its job {} did not finish within {} s (systemd is still working on it: see "
          "systemctl list-jobs)",
          job, timeout.count() / 1000);
  }
  return jobResult_;
}

void Manager::killUnit(const std::string& unit, const char* whom, int signal) {
  CallError err;
  int r = sd_bus_call_method(bus_.get(), kDest, kPath, kManager, "KillUnit", err.get(), nullptr,
                             "ssi", unit.c_str(), whom, signal);
  if (r < 0) err.raise(r);
}

void Manager::resetFailedUnit(const std::string& unit) {
  CallError err;
  int r = sd_bus_call_method(bus_.get(), kDest, kPath, kManager, "ResetFailedUnit", err.get(),
                             nullptr, "s", unit.c_str());
  if (r < 0) err.raise(r);
}

std::string Manager::loadUnit(const std::string& unit) {
  CallError err;
  sd_bus_message* raw = nullptr;
  int r = sd_bus_call_method(bus_.get(), kDest, kPath, kManager, "LoadUnit", err.get(), &raw, "s",
                             unit.c_str());
  MessagePtr reply(raw);
  if (r < 0) err.raise(r);
  const char* path = nullptr;
  check(sd_bus_message_read(reply.get(), "o", &path), "cannot read LoadUnit's reply");
  return path;
}

std::string Manager::getString(const std::string& path, const char* ifaceName, const char* prop) {
  CallError err;
  char* value = nullptr;
  int r = sd_bus_get_property_string(bus_.get(), kDest, path.c_str(), iface(ifaceName).c_str(),
                                     prop, err.get(), &value);
  if (r < 0) err.raise(r);
  std::string out = value ? value : "";
  std::free(value);
  return out;
}

namespace {
template <typename T>
T getTrivial(sd_bus* bus, const std::string& path, const char* ifaceName, const char* prop,
             char type) {
  CallError err;
  T value{};
  int r = sd_bus_get_property_trivial(bus, kDest, path.c_str(), iface(ifaceName).c_str(), prop,
                                      err.get(), type, &value);
  if (r < 0) err.raise(r);
  return value;
}
}  // namespace

uint64_t Manager::getU64(const std::string& path, const char* i, const char* prop) {
  return getTrivial<uint64_t>(bus_.get(), path, i, prop, 't');
}
uint32_t Manager::getU32(const std::string& path, const char* i, const char* prop) {
  return getTrivial<uint32_t>(bus_.get(), path, i, prop, 'u');
}
int32_t Manager::getI32(const std::string& path, const char* i, const char* prop) {
  return getTrivial<int32_t>(bus_.get(), path, i, prop, 'i');
}
bool Manager::getBool(const std::string& path, const char* i, const char* prop) {
  // D-Bus booleans travel as 32-bit ints.
  return getTrivial<int>(bus_.get(), path, i, prop, 'b') != 0;
}

std::string Manager::getHex(const std::string& path, const char* i, const char* prop) {
  CallError err;
  sd_bus_message* raw = nullptr;
  int r = sd_bus_get_property(bus_.get(), kDest, path.c_str(), iface(i).c_str(), prop, err.get(),
                              &raw, "ay");
  if (r < 0) err.raise(r);
  MessagePtr reply(raw);
  const void* bytes = nullptr;
  size_t n = 0;
  check(sd_bus_message_read_array(reply.get(), 'y', &bytes, &n),
        "cannot read a byte-array property");
  return toHex(static_cast<const unsigned char*>(bytes), n);
}

}  // namespace mesh::supervise::sdbus
