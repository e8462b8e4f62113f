#include "fleet/restart_slots.hh"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "util/error.hh"
#include "util/fd.hh"

namespace mesh::fleet {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using namespace std::chrono_literals;

namespace {

// The longest a watch or a backoff pause runs before *stop is looked at again. Each
// slice opens a new watch stream, so this trades shutdown latency for load on etcd.
constexpr milliseconds kStopCheck = 250ms;
// Without a stop flag: still end a watch now and then, so that a connection that died
// silently cannot hide a freed slot until the timeout.
constexpr milliseconds kLongestWatch = 5s;
// A watch that times out before etcd's first answer is reported as "unreachable", so a
// watch is never given less than a loopback round trip or two.
constexpr milliseconds kShortestWatch = 100ms;
constexpr milliseconds kFirstBackoff = 100ms;
constexpr milliseconds kLongestBackoff = 2s;
// Free slots tried per look; past these, look again (others are taking them meanwhile).
constexpr std::size_t kTriesPerLook = 8;

std::string shownDuration(Clock::duration d) {
  const auto ms = std::chrono::duration_cast<milliseconds>(d).count();
  if (ms < 1000) return fmt::format("{} ms", ms);
  if (ms % 1000 == 0) return fmt::format("{} s", ms / 1000);
  return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000);
}

bool stopped(const std::atomic<bool>* stop) {
  return stop != nullptr && stop->load();
}

// Sleeps for d but not past deadline, waking early once *stop is set. The flag offers
// nothing to wait on, so it is polled.
void pause(milliseconds d, Clock::time_point deadline, const std::atomic<bool>* stop) {
  const auto until = std::min(Clock::now() + d, deadline);
  for (auto now = Clock::now(); now < until && !stopped(stop); now = Clock::now())
    std::this_thread::sleep_for(stop ? std::min<Clock::duration>(until - now, 50ms) : until - now);
}

// A slot's value as it may appear in a message.
std::string shownHolder(const std::string& value) {
  std::string out;
  for (char c : value.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return value.size() > 80 ? out + "..." : out;
}

// The slots below limit that are taken in `range`, by index.
std::map<std::int64_t, EtcdKeyValue> takenSlots(const EtcdRange& range, const std::string& prefix,
                                                std::int64_t limit) {
  std::map<std::int64_t, EtcdKeyValue> taken;
  for (const auto& kv : range.kvs) {
    if (kv.key.size() <= prefix.size() || kv.key.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string index = kv.key.substr(prefix.size());
    std::int64_t n = -1;
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), n);
    if (ec != std::errc() || end != index.data() + index.size()) continue;
    if (n < 0 || n >= limit || std::to_string(n) != index) continue;  // "01" is not slot 1
    taken.emplace(n, kv);
  }
  return taken;
}

// A slot to try: absent (put if still absent) or ignored (put if still at modRevision).
struct Candidate {
  std::int64_t index = 0;
  std::int64_t modRevision = 0;  // 0: the key is absent
};

std::string describeHolders(const std::map<std::int64_t, EtcdKeyValue>& taken, std::int64_t limit) {
  if (limit == 1 && taken.contains(0)) return "slot 0 held by " + shownHolder(taken.at(0).value);
  std::string list;
  std::size_t shown = 0;
  for (const auto& [index, holder] : taken) {
    if (shown++ == 5) {
      list += ", ...";
      break;
    }
    list += fmt::format("{}{}: {}", list.empty() ? "" : ", ", index, shownHolder(holder.value));
  }
  return fmt::format("all {} slots held ({})", limit, list);
}

// Watches every key under prefix from fromRevision until one changes (true), or until
// the deadline passes or *stop is set (false).
bool waitForChange(EtcdClient& etcd, const std::string& prefix, std::int64_t fromRevision,
                   Clock::time_point deadline, const std::atomic<bool>* stop) {
  for (;;) {
    if (stopped(stop)) return false;
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    const auto slice = std::clamp(std::chrono::ceil<milliseconds>(left), kShortestWatch,
                                  stop ? kStopCheck : kLongestWatch);
    if (etcd.watch(
            prefix, fromRevision, [](const std::vector<EtcdEvent>&) { return false; }, slice,
            EtcdClient::WatchScope::Prefix))
      return true;
  }
}

}  // namespace

struct RestartSlots::Slot::State {
  State(EtcdClient& e, std::string k, std::int64_t l, std::chrono::seconds t,
        Clock::time_point grantedAt)
      : etcd(e), key(std::move(k)), lease(l), ttl(t), vouchedUntil(grantedAt + t) {}

  EtcdClient& etcd;
  const std::string key;
  const std::int64_t lease;
  const std::chrono::seconds ttl;

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;  // guarded by mutex: tells the keeper to end
  bool released = false;  // the owning thread's: release() has run
  std::atomic<bool> lost{false};
  Clock::time_point vouchedUntil;  // the keeper's: when the lease ends if not renewed
  std::thread keeper;

  // The keeper thread: renews the lease every ttl/3 until told to stop or until etcd
  // answers that it has expired. Failed renewals are retried on the next tick.
  void keepAlive() noexcept {
    const auto period = std::chrono::duration_cast<milliseconds>(ttl) / 3;
    std::unique_lock lock(mutex);
    while (!wake.wait_for(lock, period, [this] { return stopping; })) {
      lock.unlock();
      const auto sent = Clock::now();
      try {
        const auto left = etcd.keepAliveOnce(lease);
        if (left <= 0) {
          lost = true;  // gone for good: nothing left to renew
          return;
        }
        vouchedUntil = sent + std::chrono::seconds(left);
      } catch (...) {  // unreachable or refused; past the TTL the key may be someone else's
        if (Clock::now() >= vouchedUntil) lost = true;
      }
      lock.lock();
    }
  }

  void stopKeeper() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (keeper.joinable()) keeper.join();  // at most one keepalive request away
  }
};

RestartSlots::Slot::Slot(std::unique_ptr<State> state) : state_(std::move(state)) {}

RestartSlots::Slot::Slot(Slot&& other) noexcept = default;

RestartSlots::Slot& RestartSlots::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    releaseQuietly();
    state_ = std::move(other.state_);
  }
  return *this;
}

RestartSlots::Slot::~Slot() {
  releaseQuietly();
}

const std::string& RestartSlots::Slot::key() const {
  static const std::string none;
  return state_ ? state_->key : none;
}

std::int64_t RestartSlots::Slot::lease() const {
  return state_ ? state_->lease : 0;
}

bool RestartSlots::Slot::held() const {
  return state_ && !state_->released;
}

bool RestartSlots::Slot::lost() const {
  return state_ && state_->lost.load();
}

void RestartSlots::Slot::release() {
  if (!held()) return;
  state_->released = true;
  state_->stopKeeper();
  try {
    if (!state_->etcd.revoke(state_->lease)) state_->lost = true;  // had already expired
  } catch (const Error& e) {
    throw Error(
        "releasing restart slot {}: {}; the slot frees itself when its lease expires "
        "(TTL {} s)",
        state_->key, e.what(), state_->ttl.count());
  }
}

void RestartSlots::Slot::releaseQuietly() noexcept {
  try {
    release();
  } catch (...) {  // the lease expires on its own within its TTL
  }
}

RestartSlots::RestartSlots(EtcdClient& etcd, FleetKeys keys, std::string holder,
                           std::chrono::seconds leaseTtl)
    : etcd_(etcd),
      keys_(std::move(keys)),
      holder_(holder),
      value_(fmt::format("{} pid {}", holder, getpid())),
      leaseTtl_(leaseTtl) {
  if (leaseTtl_ < std::chrono::seconds(1))
    throw InputError("restart slots: a lease TTL of {} s is below the minimum of 1 s",
                     leaseTtl_.count());
}

RestartSlots::Slot RestartSlots::acquire(const std::string& service, std::int64_t limit,
                                         milliseconds timeout, const std::atomic<bool>* stop) {
  checkFleetName(service, "restart slot service");
  if (limit < 1)
    throw InputError("restart slots for {}: a limit of {} is below the minimum of 1", service,
                     limit);
  const std::string prefix = keys_.restartSlots(service);
  const auto start = Clock::now();
  const auto deadline = start + timeout;

  // One lease per try, granted before the txns and revoked unless a txn took a slot.
  auto tryTake = [&](const std::vector<Candidate>& candidates) -> std::optional<Slot> {
    const auto grantedAt = Clock::now();
    const auto lease = etcd_.grantLease(leaseTtl_.count());
    Finally revokeUnlessTaken([&] {
      try {
        etcd_.revoke(lease);
      } catch (...) {  // unreachable: the lease, holding no key, expires within its TTL
      }
    });
    for (const auto& c : candidates) {
      std::string key = prefix + std::to_string(c.index);
      const bool took =
          c.modRevision == 0
              ? etcd_.txnPutIfAbsent(key, value_, lease)
              : etcd_.txnPutIfUnchanged(key, value_, c.modRevision, lease).has_value();
      if (!took) continue;
      auto state =
          std::make_unique<Slot::State>(etcd_, std::move(key), lease, leaseTtl_, grantedAt);
      state->keeper = std::thread([s = state.get()] { s->keepAlive(); });
      revokeUnlessTaken.dismiss();
      return Slot(std::move(state));
    }
    return std::nullopt;
  };

  std::string why;  // why the last look found no slot
  auto backoff = kFirstBackoff;
  for (bool looked = false;; looked = true) {
    if (stopped(stop))
      throw Error(
          "stopped waiting for a restart slot for {} after {} (of up to {}): asked to "
          "stop{}",
          service, shownDuration(Clock::now() - start), shownDuration(timeout),
          why.empty() ? "" : " (" + why + ")");
    if (looked && Clock::now() >= deadline)
      throw Error("no restart slot for {} within {}: {}", service, shownDuration(timeout), why);
    try {
      const auto range = etcd_.getPrefix(prefix);
      backoff = kFirstBackoff;
      const auto taken = takenSlots(range, prefix, limit);
      std::vector<Candidate> candidates;
      for (std::int64_t i = 0; i < limit && candidates.size() < kTriesPerLook; ++i) {
        const auto it = taken.find(i);
        if (it == taken.end())
          candidates.push_back({i, 0});
        else if (ignorable(it->second))
          candidates.push_back({i, it->second.modRevision});
      }
      if (!candidates.empty()) {
        if (auto slot = tryTake(candidates)) return std::move(*slot);
        why = "other nodes took every free slot first";
        continue;  // look again at once
      }
      why = describeHolders(taken, limit);
      // Wake on a change, or when the oldest holder passes the bound.
      waitForChange(etcd_, prefix, range.revision + 1, std::min(deadline, nextExpiry(taken)), stop);
    } catch (const EtcdCompacted&) {
      // The history after our look is gone: look again.
    } catch (const Error& e) {
      why = e.what();
      pause(backoff, deadline, stop);
      backoff = std::min(backoff * 2, kLongestBackoff);
    }
  }
}

bool RestartSlots::ignorable(const EtcdKeyValue& kv) {
  if (kv.lease == 0) return true;  // would never go: a writer's, not a node's
  const auto space = kv.value.find(" pid ");
  if (space != std::string::npos && kv.value.substr(0, space) == holder_ && kv.value != value_)
    return true;  // this node's, from an agent that died: a node never waits for itself
  auto [it, fresh] = seen_.try_emplace(kv.key, kv.createRevision, Clock::now());
  if (!fresh && it->second.first != kv.createRevision)
    it->second = {kv.createRevision, Clock::now()};
  return Clock::now() - it->second.second >= leaseTtl_;
}

std::chrono::steady_clock::time_point RestartSlots::nextExpiry(
    const std::map<std::int64_t, EtcdKeyValue>& taken) {
  auto next = Clock::time_point::max();
  for (const auto& [index, kv] : taken)
    if (auto it = seen_.find(kv.key); it != seen_.end() && it->second.first == kv.createRevision)
      next = std::min(next, it->second.second + leaseTtl_);
  return next;
}

std::vector<std::string> RestartSlots::releaseStale() {
  std::vector<std::string> released;
  const std::string prefix = "/mesh/" + keys_.cluster + "/restarts/";
  for (const auto& kv : etcd_.getPrefix(prefix).kvs) {
    const auto space = kv.value.find(" pid ");
    if (space == std::string::npos || kv.value.substr(0, space) != holder_ || kv.value == value_)
      continue;
    if (etcd_.txnDeleteIfUnchanged(kv.key, kv.modRevision)) released.push_back(kv.key);
  }
  return released;
}

}  // namespace mesh::fleet
