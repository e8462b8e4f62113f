#include "fleet/etcd/members.hh"

#include <algorithm>
#include <cstdint>

#include "util/error.hh"

namespace mesh::fleet::etcd {

std::vector<std::string> Members::parse(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = list.find(',', start);
    std::string one =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!one.empty() && one.front() == ' ') one.erase(0, 1);
    while (!one.empty() && (one.back() == '/' || one.back() == ' ')) one.pop_back();
    if (one.empty())
      throw InputError("etcd endpoints {}: an empty entry; give URL,URL,… (no empty ones)", list);
    if (!one.starts_with("http://") && !one.starts_with("https://"))
      throw InputError(
          "etcd endpoint {}: expected an http:// or https:// URL (etcd's client URL, "
          "http://HOST:PORT)",
          one);
    if (std::find(out.begin(), out.end(), one) == out.end()) out.push_back(one);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::size_t Members::firstFor(const std::string& spreadBy, std::size_t count) {
  if (spreadBy.empty() || count == 0) return 0;
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : spreadBy) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<std::size_t>(h % count);
}

Members::Members(std::vector<std::string> urls, std::size_t first)
    : urls_(std::move(urls)), current_(first % urls_.size()), failures_(urls_.size()) {}

std::size_t Members::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

std::size_t Members::failed(std::size_t i, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  i %= urls_.size();
  failures_[i] = why;
  if (current_ == i) current_ = (i + 1) % urls_.size();
  return current_;
}

void Members::succeeded(std::size_t i) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_[i % urls_.size()].clear();
}

std::string Members::lastFailure(std::size_t i) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_[i % urls_.size()];
}

}  // namespace mesh::fleet::etcd
