// One function per command; main.cc holds the table that wires them to CLI11.
// A command with options of its own has a small struct here that adds them.
#pragma once

#include <cstdint>
#include <string>

#include "cli/common.hh"
#include "state/store.hh"

namespace mesh::cli {

struct ApplyOptions {
  std::string metrics;  // node_exporter textfile to write after the cycle; "" none
  void addTo(CLI::App& cmd);
};

struct StatusOptions {
  int churnThreshold = 2;    // churning at this many undeclared changes…
  int64_t churnWindow = 10;  // …within the node's last this-many cycles
  void addTo(CLI::App& cmd);
};

struct HistoryOptions {
  std::string id;  // "" every resource
  int64_t limit = 50;
  void addTo(CLI::App& cmd);
};

struct RollbackOptions {
  int64_t generation = 0;  // 0: the one before the current
  std::string metrics;
  void addTo(CLI::App& cmd);
};

struct GcOptions {
  int64_t keep = 5;  // generations whose bundles and blobs stay
  bool dryRun = false;
  void addTo(CLI::App& cmd);
};

// One cycle of `declaration` with the store open and locked, printed as `apply`
// prints it; returns apply's exit code. Shared by apply and rollback.
int applyAndReport(const decl::Declaration& declaration, const CommonOptions& o,
                   state::Store& store, const std::string& metricsPath);

int runApply(const std::string& declPath, CommonOptions& o, const ApplyOptions& a = {});
int runPlan(const std::string& declPath, CommonOptions& o);
int runStatus(CommonOptions& o, const StatusOptions& s = {});
int runHistory(CommonOptions& o, const HistoryOptions& h);
int runGenerations(CommonOptions& o);
int runRollback(CommonOptions& o, const RollbackOptions& r);
int runGc(CommonOptions& o, const GcOptions& g);

// `run`: the agent (src/agent).
struct RunOptions {
  std::string declaration;  // default <root>/etc/mesh-host/declaration.toml
  std::string interval = "5m";
  std::string splay = "30s";
  std::string logFormat = "text";
  std::string metrics;  // node_exporter textfile written after each cycle; "" none
  void addTo(CLI::App& cmd);
};
int runRun(CommonOptions& o, const RunOptions& r);

}  // namespace mesh::cli
