// Internal to the declaration parser: what one pass over the TOML produces
// before the cross-resource checks, and the collector that gathers every error
// so that one run reports them all.
#pragma once

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "decl/model.hh"
#include "util/error.hh"

namespace mesh::decl {

// Collects errors as "<file>:<line>:<column>: error: <message>" and throws
// them together, sorted by position so the report reads top to bottom.
class Diagnostics {
 public:
  explicit Diagnostics(std::string file)
      : file_(std::make_shared<const std::string>(std::move(file))) {}

  const std::string& file() const { return *file_; }
  Position at(int line, int column) const { return Position{file_, line, column}; }
  // Where a piece of the text parsed on its own begins (decl/pieces.hh): its lines,
  // counted from 1 by toml++, are those of the whole text from `line` on.
  void pieceAt(int line) { linesBefore_ = line - 1; }
  int linesBefore() const { return linesBefore_; }

  void error(const Position& pos, std::string message) {
    entries_.push_back(Entry{pos, std::move(message)});
  }
  bool empty() const { return entries_.empty(); }

  void throwIfAny() const {
    if (entries_.empty()) return;
    auto sorted = entries_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
    });
    std::string text;
    std::vector<InputProblem> problems;
    for (const auto& e : sorted) {
      if (!text.empty()) text += '\n';
      text += fmt::format("{}: error: {}", e.pos.str(), e.message);
      problems.push_back(problemOf(e));
    }
    throw InputError(text, std::move(problems));
  }

 private:
  struct Entry {
    Position pos;
    std::string message;
  };

  // A "…; did you mean 'x'?" (or "…: did you mean …", "…: write `…`") ending is
  // the hint.
  static InputProblem problemOf(const Entry& e) {
    InputProblem p{e.pos.file(), e.pos.line, e.pos.column, e.message, ""};
    for (const char* sep : {"; did you mean", ": did you mean", ": write `"}) {
      if (auto at = p.message.rfind(sep); at != std::string::npos) {
        p.hint = p.message.substr(at + 2);
        p.message.erase(at);
        break;
      }
    }
    return p;
  }
  FileName file_;  // never null
  int linesBefore_ = 0;
  std::vector<Entry> entries_;
};

// A reference to another resource, with where it was written.
struct Ref {
  std::string id;
  Position pos;
};

// A user or group named by a resource (owner, group, a user's groups), with
// where: checked against the node and the accounts declared beside it.
struct AccountRef {
  std::string name;
  bool group = false;  // a group's name, else a user's
  Position pos;
  std::string key;  // "owner", "group", …
};

// What the checks across resources need of a resource beside the resource itself:
// its references as written, with their positions. Resource::requires_/restartOn/
// reloadOn are filled once the refs are checked.
struct DraftSide {
  std::vector<Ref> requires_;
  std::vector<Ref> restartOn;
  std::vector<Ref> reloadOn;
  std::vector<AccountRef> accounts;  // names it gives as users or groups
  Position pathPos;                  // of the path value; line 0 when there is no valid path
  Position servicePos;               // of the service value, or the resource's own position
};

inline std::string subjectOf(const Resource& r) {  // "file node-tools.config"
  return fmt::format("{} {}", kindName(r.kind), r.id);
}

// A resource as read from its table (kinds.cc), with what the checks need of it.
struct Draft : DraftSide {
  Resource resource;

  std::string subject() const { return subjectOf(resource); }
};

// Every resource read, held apart from what the checks need of it: the resources
// in the array the declaration keeps (ordered in place, never copied into another:
// 41 MB for 100,000 files), their sides beside it, by the same index.
struct Drafts {
  std::vector<Resource> resources;
  std::vector<DraftSide> sides;

  size_t size() const { return resources.size(); }
  void reserve(size_t n) {
    resources.reserve(n);
    sides.reserve(n);
  }
  void push(Draft&& d) {
    resources.push_back(std::move(d.resource));
    sides.push_back(std::move(static_cast<DraftSide&>(d)));
  }
  std::string subject(size_t i) const { return subjectOf(resources[i]); }
};

}  // namespace mesh::decl
