// Internal to the declaration parser: typed reads of one TOML table's keys.
// Every reader reports its own errors (with the value's position) and returns
// nothing when the key is absent or its value is bad, so a caller can go on
// and collect further errors.
#pragma once

#include <toml++/toml.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decl/draft.hh"
#include "decl/parse.hh"
#include "decl/placeholders.hh"

namespace mesh::decl {

enum class PrincipalKind { User, Group };

// What a string value may hold: anything; not empty; one non-empty line, no NUL;
// not empty and no control character at all (bytes below 0x20, and 0x7f).
enum class Text { Any, NonEmpty, Line, Plain };

class Fields {
 public:
  // `subject` names the table in messages: "file node-tools.config".
  Fields(const toml::table& table, Position tablePos, std::string subject, Diagnostics& diags);

  const toml::node* find(std::string_view key) const { return table_.get(key); }
  Position at(const toml::node& node) const;
  const Position& tablePos() const { return tablePos_; }
  const std::string& subject() const { return subject_; }

  // Reports every key not in `allowed`, listing the allowed ones.
  // `alsoHandled`: keys the caller has already reported on its own.
  void rejectUnknown(std::initializer_list<std::string_view> allowed,
                     std::initializer_list<std::string_view> alsoHandled = {});
  // Reports that a required key is absent (at the table), with an example —
  // unless an unknown key was found, which is most likely that key misspelt.
  void missing(std::string_view key, std::string_view example);
  bool hadUnknownKeys() const { return hadUnknownKeys_; }
  void error(const Position& pos, std::string message) { diags_.error(pos, std::move(message)); }

  std::optional<std::string> string(std::string_view key, Text text = Text::Any);
  // From now on, path() and unit() values and substituted() strings have {node} and
  // {cluster} replaced (decl/placeholders.hh); null: left as written. `p` outlives this.
  void substituteWith(const Placeholders* p) { placeholders_ = p; }
  // string(), with {node} and {cluster} replaced; `text` is checked on the result too.
  std::optional<std::string> substituted(std::string_view key, Text text = Text::Any);
  // An absolute, normal path without control characters (pathProblem), substituted.
  std::optional<std::string> path(std::string_view key);
  std::optional<bool> boolean(std::string_view key);
  std::optional<mode_t> mode(std::string_view key);
  std::optional<Principal> principal(std::string_view key, PrincipalKind kind,
                                     const ParseOptions& options);
  // Names read by principal() go to `sink` (with where they were written)
  // instead of being looked up at once.
  void collectAccounts(std::vector<AccountRef>* sink) { accounts_ = sink; }
  std::optional<Digest> digest(std::string_view key);
  std::optional<uint64_t> positive(std::string_view key);
  std::vector<Ref> ids(std::string_view key);
  // A table of unit keys. `requireExecStart`: a process's unit (a service's
  // drop-in amends a unit that has one).
  std::optional<std::map<std::string, UnitValue>> unit(std::string_view key,
                                                       bool requireExecStart = true);
  // The fields of `table`, a table inside this one, reported on as `subject`, with the
  // same diagnostics and substitutions.
  Fields nested(const toml::table& table, const toml::node& at, std::string subject) const {
    Fields f(table, this->at(at), std::move(subject), diags_);
    f.placeholders_ = placeholders_;
    return f;
  }
  // An error at `n` that the value of `key` is not of the `expected` type.
  void wrongTypeOf(std::string_view key, const toml::node& n, std::string_view expected) {
    wrongType(key, n, expected);
  }

 private:
  void wrongType(std::string_view key, const toml::node& node, std::string_view expected);
  // `v` substituted, or nullopt having reported at `n` why it cannot be.
  std::optional<std::string> substitute(std::string_view key, const toml::node& n, std::string v);

  const toml::table& table_;
  Position tablePos_;
  std::string subject_;
  Diagnostics& diags_;
  bool hadUnknownKeys_ = false;
  std::vector<AccountRef>* accounts_ = nullptr;
  const Placeholders* placeholders_ = nullptr;
};

// "a string", "an integer", … for messages.
std::string_view typeName(toml::node_type type);
Position positionOf(const Diagnostics& diags, const toml::source_region& source);

// A value from the declaration as it may be echoed in a one-line message:
// control characters (bytes below 0x20, and 0x7f) escaped as \n, \t, \r or
// \xHH, very long values cut (never inside a UTF-8 character).
std::string shown(std::string_view value);

// Pure checks, shared with the walk over modules and testable on their own.
bool validName(std::string_view name);  // module and resource names: [A-Za-z0-9_-]+
// User and group names as useradd accepts them: ^[a-z_][a-z0-9_.-]*\$?$, at most 32.
bool validPrincipalName(std::string_view name);
// "contains a control character (\x1b at byte 6); remove it" for the first
// byte below 0x20 or 0x7f in `value` (bytes counted from 1); nullopt when none.
std::optional<std::string> controlProblem(std::string_view value);
// Why `path` is not an acceptable managed path; nullopt when it is.
std::optional<std::string> pathProblem(std::string_view path);

}  // namespace mesh::decl
