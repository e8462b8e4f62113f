// Drift repaired as it happens: inotify on the directories that hold what the agent
// manages — the parent of each managed file, credential, link and directory, and every
// directory inside an archive's tree (directories, not files: 100,000 managed files in a
// few hundred directories stay far within the default watch limits). An event on a
// managed name (or anywhere in an archive's tree) names the resource that drifted; the
// agent then runs a cycle for it at once (see agent.cc). A directory that cannot be
// watched (the watch limit, a missing parent) is counted: those resources wait for the
// interval, and `status` says so.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "decl/model.hh"
#include "util/fd.hh"

namespace mesh::agent {

class DriftWatch {
 public:
  DriftWatch();
  int fd() const { return fd_.get(); }

  // Watches what `d` declares under `root`, and nothing else (old watches go).
  void update(const decl::Declaration& d, const std::string& root);
  // Reads every pending event; returns what drifted: resource id → a path it names.
  std::map<std::string, std::string> drain();

  size_t watched() const { return byWatch_.size(); }
  size_t unwatched() const { return unwatched_; }

 private:
  struct Dir {
    std::string path;
    std::map<std::string, std::string> names;  // entry name → resource id ("" any: a tree)
    std::string tree;                          // an archive tree's id: every entry counts
  };
  void add(const std::string& dir, const std::string& name, const std::string& id, bool tree,
           std::map<std::string, Dir>& want);

  Fd fd_;
  std::map<int, Dir> byWatch_;  // watch descriptor → directory
  size_t unwatched_ = 0;
};

}  // namespace mesh::agent
