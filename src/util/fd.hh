// File descriptors and a scope guard.
//
// Fd owns a descriptor: it closes it, moves and never copies. FdRef borrows one
// that an Fd elsewhere owns and that outlives it: it never closes, copies freely,
// and converts to int for the system calls. A struct or member that holds a
// descriptor it does not own (Context::Place, a cache's current directory) holds
// an FdRef, so the reader sees at the type who closes it. A function parameter
// used only during the call may stay a plain `int`.
#pragma once

#include <unistd.h>

#include <utility>

namespace mesh {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

class FdRef {
 public:
  constexpr FdRef() = default;
  FdRef(const Fd& owner) : fd_(owner.get()) {}  // NOLINT: borrowing is the point
  explicit constexpr FdRef(int fd) : fd_(fd) {}

  constexpr int get() const { return fd_; }
  constexpr operator int() const { return fd_; }  // NOLINT: for the system calls

 private:
  int fd_ = -1;
};

template <typename F>
class Finally {
 public:
  explicit Finally(F f) : f_(std::move(f)) {}
  Finally(const Finally&) = delete;
  Finally& operator=(const Finally&) = delete;
  ~Finally() {
    if (armed_) f_();
  }
  void dismiss() { armed_ = false; }

 private:
  F f_;
  bool armed_ = true;
};

}  // namespace mesh
