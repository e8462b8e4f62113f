#include "fleet/push_lock.hh"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fleet/json_value.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

namespace {

using Clock = std::chrono::steady_clock;

std::string durationText(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000)
                               : fmt::format("{}ms", d.count());
}

}  // namespace

PushLock::PushLock(EtcdClient& etcd, std::string key, std::string what, const std::string& pushedBy,
                   std::chrono::milliseconds timeout,
                   const std::function<void(const std::string&)>& warn)
    : etcd_(etcd), key_(std::move(key)), what_(std::move(what)) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string holder = jsonData(nlohmann::json{
      {"pushed_by", pushedBy}, {"host", host}, {"pid", ::getpid()}, {"since_ms", unixNowMs()}});
  lease_ = etcd_.grantLease(kLockTtl);
  renewed_ = Clock::now();
  const auto deadline = Clock::now() + timeout;
  bool announced = false;
  const bool pushing = what_ == "push lock";
  try {
    while (!etcd_.txnPutIfAbsent(key_, holder, lease_)) {
      const auto range = etcd_.getPrefix(key_);
      const EtcdKeyValue* held = nullptr;
      for (const auto& kv : range.kvs)
        if (kv.key == key_) held = &kv;
      if (!held) continue;  // freed between the two calls
      const std::string by = holderText(held->value);
      if (!announced && warn)
        warn(fmt::format("waiting for the {} of {} held by {}; at most {}", what_, key_, by,
                         durationText(timeout)));
      announced = true;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0)
        throw Error(
            "another {} holds the {} {} (held by {}) for more than {}; {}: {} again once it is "
            "done, or wait longer with --lock-timeout",
            pushing ? "push" : "driver", what_, key_, by, durationText(timeout),
            pushing ? "nothing was pushed" : "nothing was done", pushing ? "push" : "try");
      // Until the key is deleted (released, or its lease expired); our own lease is
      // renewed in between, since waiting may take longer than its TTL.
      etcd_.watch(
          key_, range.revision + 1,
          [](const std::vector<EtcdEvent>& evs) {
            for (const auto& e : evs)
              if (e.type == EtcdEvent::Type::Delete) return false;
            return true;
          },
          std::min<std::chrono::milliseconds>(left, std::chrono::seconds(kLockTtl / 3)));
      keepAlive();
    }
  } catch (...) {
    release();
    throw;
  }
}

void PushLock::keepAlive() {
  if (Clock::now() - renewed_ < std::chrono::seconds(kLockTtl / 3)) return;
  if (etcd_.keepAliveOnce(lease_) == 0)
    throw Error("the {} {} expired while held (etcd too slow?); {} again", what_, key_,
                what_ == "push lock" ? "push" : "try");
  renewed_ = Clock::now();
}

std::string PushLock::holderText(const std::string& value) {
  const auto j = parseEtcdJson(value);
  if (!j.is_object()) return "an unknown holder";
  return fmt::format("{} (pid {} on {})", j.value("pushed_by", "?"), j.value("pid", 0),
                     j.value("host", "?"));
}

void PushLock::release() noexcept {
  if (lease_ == 0) return;
  try {
    etcd_.revoke(lease_);
  } catch (const std::exception&) {
    // It frees itself when the lease expires.
  }
  lease_ = 0;
}

}  // namespace mesh::fleet
