#include "decl/health_field.hh"

#include <fmt/format.h>

#include "util/timespan.hh"

namespace mesh::decl {

namespace {

constexpr const char* kExample =
    "health = { exec = \"{bundle}/bin/check\", interval = \"10s\", timeout = \"5s\" }";

// A time span in ms, or nullopt having reported why not.
std::optional<int64_t> span(Fields& h, const char* key) {
  const toml::node* n = h.find(key);
  if (!n) return std::nullopt;
  auto text = h.string(key, Text::Line);
  if (!text) return std::nullopt;
  const auto us = parseTimeSpanUs(*text);
  if (!us || *us == kTimeSpanInfinity) {
    h.error(h.at(*n), fmt::format("{} '{}' in {} is not a time span; use e.g. \"5s\", \"500ms\" or "
                                  "\"1min\"",
                                  key, shown(*text), h.subject()));
    return std::nullopt;
  }
  return *us / 1000;
}

}  // namespace

std::optional<HealthCheck> readHealth(Fields& f) {
  const toml::node* n = f.find("health");
  if (!n) return std::nullopt;
  const auto* table = n->as_table();
  if (!table) {
    f.wrongTypeOf("health", *n, std::string("a table, e.g. ") + kExample);
    return std::nullopt;
  }
  Fields h = f.nested(*table, *n, f.subject() + "'s health");
  h.rejectUnknown({"exec", "interval", "timeout"});
  HealthCheck c;
  bool ok = true;
  if (!h.find("exec")) {
    h.missing("exec", kExample);
    ok = false;
  } else if (auto exec = h.substituted("exec", Text::Plain)) {
    if (exec->find_first_not_of(" \t") == std::string::npos) {
      h.error(h.at(*h.find("exec")),
              fmt::format("exec in {} is empty; name the command that checks it, e.g. {}",
                          h.subject(), kExample));
      ok = false;
    }
    c.exec = std::move(*exec);
  } else {
    ok = false;
  }
  const bool hadInterval = h.find("interval"), hadTimeout = h.find("timeout");
  if (hadInterval) {
    if (auto ms = span(h, "interval")) {
      if (*ms < kHealthMinIntervalMs) {
        h.error(h.at(*h.find("interval")),
                fmt::format("interval in {} is {} ms; a check runs at most once a second: use "
                            "\"1s\" or more",
                            h.subject(), *ms));
        ok = false;
      }
      c.intervalMs = *ms;
    } else {
      ok = false;
    }
  }
  if (hadTimeout) {
    if (auto ms = span(h, "timeout")) {
      if (*ms <= 0) {
        h.error(h.at(*h.find("timeout")),
                fmt::format("timeout in {} is 0; give the check time to answer, e.g. \"2s\"",
                            h.subject()));
        ok = false;
      }
      c.timeoutMs = *ms;
    } else {
      ok = false;
    }
  } else if (c.intervalMs < c.timeoutMs) {
    c.timeoutMs = c.intervalMs;  // the default timeout, never past the interval
  }
  if (ok && c.timeoutMs > c.intervalMs)
    h.error(h.at(*h.find("timeout")),
            fmt::format("timeout in {} ({} ms) is longer than its interval ({} ms): one check "
                        "would still run when the next is due; make it at most the interval",
                        h.subject(), c.timeoutMs, c.intervalMs));
  if (!ok || c.timeoutMs > c.intervalMs) return std::nullopt;
  return c;
}

}  // namespace mesh::decl
