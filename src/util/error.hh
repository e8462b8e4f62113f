// One error hierarchy for mesh-host. Errors carry a message that says what went
// wrong, where, and (when we know) what to do; context is prepended as an error
// travels up. main() maps the type to an exit code.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace mesh {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}

  template <typename... Args>
  explicit Error(fmt::format_string<Args...> f, Args&&... args)
      : std::runtime_error(fmt::format(f, std::forward<Args>(args)...)) {}
};

// A system call failed: the message names the call's subject and strerror(errno).
class SysError : public Error {
 public:
  SysError(int err, const std::string& what);
  int err() const { return err_; }

 private:
  int err_;
};

// Bad input from the operator (declaration, command line): exit code 2, nothing applied.
class InputError : public Error {
 public:
  using Error::Error;
};

// Throws SysError for the current errno with "<what>: <strerror>".
[[noreturn]] void throwSys(const std::string& what);

}  // namespace mesh
