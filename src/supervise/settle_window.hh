// The settle rule's window (Supervisor::settle), one for both backends: a backend
// tells it each start or restart that succeeded, with its own token (what it will
// need to judge the service: the main pid it started, …); settle() then waits —
// through the backend's wait — until every one of them that has a window has been
// up kSettle since its start, all of them in one window, and asks the backend's
// judge about each. What the backends differ in is only what a wait is (the
// systemd backend pumps its bus, the builtin one sleeps) and how a service is
// judged; the bookkeeping, the one deadline and the order are here.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "supervise/supervisor.hh"

namespace mesh::supervise {

template <typename Token>
class SettleWindow {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;
  // Waits at most the time given (it may return sooner: settle() looks at the
  // clock again).
  using Wait = std::function<void(std::chrono::milliseconds)>;
  // "" when the service launched with `token` stayed up; else why not.
  using Judge = std::function<std::string(const std::string& name, const Token& token)>;

  explicit SettleWindow(std::chrono::milliseconds window = kSettle, Now now = Clock::now)
      : window_(window), now_(std::move(now)) {}

  // A start or restart of `name` that succeeded, now. `windowless`: started when
  // its job was done (Type=notify at READY=1, oneshot when it has run), so it has
  // no window and is not judged. A later launch of the same name replaces this one.
  void launched(const std::string& name, Token token, bool windowless) {
    launched_.insert_or_assign(name, Launch{now_(), std::move(token), windowless});
  }

  // Stopped: nothing left to settle.
  void forget(const std::string& name) { launched_.erase(name); }

  // Whether `name` was launched and not settled or forgotten since.
  bool pending(const std::string& name) const { return launched_.count(name) != 0; }

  // The settle rule for `names`: each launched one is forgotten; those with a
  // window are waited for until the last of them has been up `window` since its
  // launch (one deadline for all), then judged in the order of `names`. Returns
  // why, for each one that did not stay up. Names never launched are skipped; with
  // nothing to judge it returns at once, without a wait.
  std::map<std::string, std::string> settle(const std::vector<std::string>& names, const Wait& wait,
                                            const Judge& judge) {
    std::map<std::string, std::string> failed;
    std::vector<std::pair<std::string, Token>> judged;
    Clock::time_point deadline{};
    for (const auto& n : names) {
      auto it = launched_.find(n);
      if (it == launched_.end()) continue;
      if (!it->second.windowless) {
        deadline =
            judged.empty() ? it->second.at + window_ : std::max(deadline, it->second.at + window_);
        judged.emplace_back(n, std::move(it->second.token));
      }
      launched_.erase(it);
    }
    if (judged.empty()) return failed;
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now_());
      if (left.count() <= 0) break;
      wait(left);
    }
    for (const auto& [name, token] : judged)
      if (auto why = judge(name, token); !why.empty()) failed[name] = std::move(why);
    return failed;
  }

 private:
  struct Launch {
    Clock::time_point at;
    Token token;
    bool windowless = false;
  };
  std::chrono::milliseconds window_;
  Now now_;
  std::map<std::string, Launch> launched_;  // started or restarted, not settled yet
};

// A service's line of output as a failure reason carries it, on both backends: at
// most 500 bytes of it, its bytes as they are — the reason is escaped where it is
// shown (util/text_safe.hh: shownText for a terminal, jsonOut for JSON), as every
// text from outside is.
std::string reasonLine(std::string_view line);

// The settle rule's reason: "<how> within 100ms of its start", then ": <line>"
// when the service's last line of output is known.
std::string notSettled(std::string_view how, std::string_view lastLine);

}  // namespace mesh::supervise
