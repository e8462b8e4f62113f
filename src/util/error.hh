// One error hierarchy for mesh-host. Errors carry a message that says what went
// wrong, where, and (when we know) what to do; context is prepended as an error
// travels up. main() maps the type to an exit code.
//
// Adding context keeps the error what it is: catch by reference, addContext, and
// `throw;` — a SysError keeps its errno, an InputError its exit code, a BusError
// its name. Throwing a new Error with the old message in it loses all of them.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mesh {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what), what_(what) {}

  template <typename... Args>
  explicit Error(fmt::format_string<Args...> f, Args&&... args)
      : Error(fmt::format(f, std::forward<Args>(args)...)) {}

  const char* what() const noexcept override { return what_.c_str(); }

  // "<context>: <message>", e.g. "reload of web failed: <message>".
  void addContext(std::string_view context);
  // "<message>; <hint>", e.g. "<message>; see journalctl -u web".
  void addHint(std::string_view hint);

 private:
  std::string what_;
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
