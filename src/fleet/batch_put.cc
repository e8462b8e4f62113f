#include "fleet/batch_put.hh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace mesh::fleet {

namespace {

struct Batch {
  std::size_t first = 0, end = 0;  // indexes into the puts
};

std::vector<Batch> batchesOf(const std::vector<ConditionalPut>& puts, const std::string& value,
                             const BatchLimits& limits) {
  std::vector<Batch> out;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < puts.size(); ++i) {
    const std::size_t size = puts[i].key.size() + value.size();
    if (out.empty() || out.back().end - out.back().first >= limits.ops ||
        (bytes + size > limits.bytes && out.back().end > out.back().first)) {
      out.push_back({i, i});
      bytes = 0;
    }
    ++out.back().end;
    bytes += size;
  }
  return out;
}

void putBatch(EtcdClient& etcd, const std::vector<ConditionalPut>& puts, const Batch& b,
              const std::string& value, const std::function<void(std::size_t, int64_t)>& done) {
  std::vector<EtcdCompare> compares;
  std::vector<EtcdOp> ops;
  for (std::size_t i = b.first; i < b.end; ++i) {
    compares.push_back({puts[i].key, puts[i].expectedModRevision});
    ops.push_back(EtcdOp::put(puts[i].key, value));
  }
  const auto r = etcd.txn(compares, ops);
  if (r.succeeded) {
    for (std::size_t i = b.first; i < b.end; ++i) done(i, r.revision);
    return;
  }
  // Some key changed since it was read: nothing of the batch was put. Each on its own
  // finds which (the others are put).
  for (std::size_t i = b.first; i < b.end; ++i)
    done(i, etcd.txnPutIfUnchanged(puts[i].key, value, puts[i].expectedModRevision).value_or(0));
}

}  // namespace

void putAllIfUnchanged(EtcdClient& etcd, const std::vector<ConditionalPut>& puts,
                       const std::string& value, const BatchLimits& limits, const PutDone& done,
                       const std::function<void()>& tick) {
  const auto batches = batchesOf(puts, value, limits);
  std::mutex mutex;  // serializes `done`, and guards what the streams share below
  const auto report = [&](std::size_t i, int64_t revision) {
    std::lock_guard<std::mutex> lock(mutex);
    done(i, revision);
  };
  const std::size_t streams = std::min(std::max<std::size_t>(limits.streams, 1), batches.size());
  if (streams <= 1) {  // no thread, no connection of its own
    for (const auto& b : batches) {
      putBatch(etcd, puts, b, value, report);
      if (tick) tick();
    }
    return;
  }

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::size_t running = streams;
  std::condition_variable finished;
  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < streams; ++s)
    threads.emplace_back([&] {
      try {
        EtcdClient own(etcd.config(), etcd.requestTimeout());
        for (std::size_t b; !failed && (b = next++) < batches.size();)
          putBatch(own, puts, batches[b], value, report);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      finished.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (running > 0) {
      if (finished.wait_for(lock, std::chrono::seconds(1), [&] { return running == 0; })) break;
      if (!tick) continue;
      lock.unlock();  // the tick talks to etcd: streams report meanwhile
      try {
        tick();
      } catch (...) {
        std::lock_guard<std::mutex> again(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
      lock.lock();
    }
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  if (tick) tick();
}

std::vector<EtcdKeyValue> readKeysAt(EtcdClient& etcd, const std::vector<std::string>& keys,
                                     int64_t revision, std::size_t streams) {
  const std::size_t chunks = (keys.size() + kEtcdMaxTxnOps - 1) / kEtcdMaxTxnOps;
  std::vector<std::vector<EtcdKeyValue>> read(chunks);
  const auto readChunk = [&](EtcdClient& client, std::size_t c) {
    const auto from = keys.begin() + static_cast<std::ptrdiff_t>(c * kEtcdMaxTxnOps);
    const auto to = c + 1 == chunks ? keys.end() : from + kEtcdMaxTxnOps;
    read[c] = client.getKeys({from, to}, revision);
  };
  streams = std::min(std::max<std::size_t>(streams, 1), chunks);
  if (streams <= 1) {
    for (std::size_t c = 0; c < chunks; ++c) readChunk(etcd, c);
  } else {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::exception_ptr error;
    std::vector<std::thread> threads;
    for (std::size_t s = 0; s < streams; ++s)
      threads.emplace_back([&] {
        try {
          EtcdClient own(etcd.config(), etcd.requestTimeout());
          for (std::size_t c; !failed && (c = next++) < chunks;) readChunk(own, c);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      });
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
  }
  std::vector<EtcdKeyValue> out;
  for (auto& chunk : read)
    for (auto& kv : chunk) out.push_back(std::move(kv));
  std::sort(out.begin(), out.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  return out;
}

}  // namespace mesh::fleet
