// Secret bytes (credential content). Deliberately not printable: there is no
// operator<<, no fmt formatter and no implicit conversion to string, so a secret
// cannot reach a log line, plan, diff, JSON output or the state store by accident.
// The memory is wiped when the value dies.
#pragma once

#include <sodium.h>

#include <string>
#include <string_view>

namespace mesh {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string bytes) : bytes_(std::move(bytes)) {}
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  Secret(Secret&& o) noexcept : bytes_(std::move(o.bytes_)) {}
  Secret& operator=(Secret&& o) noexcept {
    wipe();
    bytes_ = std::move(o.bytes_);
    return *this;
  }
  ~Secret() { wipe(); }

  // The only way to the bytes: name it, so a reviewer sees every use.
  std::string_view exposeForWrite() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  void wipe() {
    if (!bytes_.empty()) sodium_memzero(bytes_.data(), bytes_.size());
    bytes_.clear();
  }
  std::string bytes_;
};

}  // namespace mesh
