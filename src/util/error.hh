// One error hierarchy for mesh-host. Errors carry a message that says what went
// wrong, where, and (when we know) what to do; context is prepended as an error
// travels up. main() maps the type to an exit code.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

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

// One thing wrong with the input, where it is known: `--json` lists them.
struct InputProblem {
  std::string file;  // "" when the input is not a file (an option)
  int line = 0;      // 0 when unknown
  int column = 0;
  std::string message;
  std::string hint;  // what to do instead ("did you mean 'Restart'?"), "" none
};

// Bad input from the operator (declaration, command line): exit code 2, nothing applied.
class InputError : public Error {
 public:
  using Error::Error;
  // `text` is the whole message as printed; `problems` each thing wrong, in order.
  InputError(const std::string& text, std::vector<InputProblem> problems)
      : Error(text), problems_(std::move(problems)) {}

  // Empty when the error was raised with a message only: it is then one problem
  // whose message is what().
  const std::vector<InputProblem>& problems() const { return problems_; }

 private:
  std::vector<InputProblem> problems_;
};

// Throws SysError for the current errno with "<what>: <strerror>".
[[noreturn]] void throwSys(const std::string& what);

}  // namespace mesh
