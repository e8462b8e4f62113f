#include "fleet/statement.hh"

#include <fmt/format.h>
#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include "fleet/json_value.hh"
#include "fleet/protocol.hh"
#include "trust/signing.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using json = nlohmann::json;

bool Selector::isGlob(std::string_view item) {
  return item.find_first_of("*?[") != std::string_view::npos;
}

void Selector::add(const std::string& value, const std::string& option) {
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    const std::string item = value.substr(start, comma - start);
    if (item.empty())
      throw InputError("{} \"{}\": an empty name; separate names and globs with single commas",
                       option, value);
    if (!isGlob(item)) checkFleetName(item, option);
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

std::vector<std::string> Selector::names() const {
  std::vector<std::string> out;
  for (const auto& i : items)
    if (!isGlob(i)) out.push_back(i);
  return out;
}

std::vector<std::string> Selector::globs() const {
  std::vector<std::string> out;
  for (const auto& i : items)
    if (isGlob(i)) out.push_back(i);
  return out;
}

bool Selector::matches(const std::string& node) const {
  for (const auto& i : items)
    if (isGlob(i) ? ::fnmatch(i.c_str(), node.c_str(), 0) == 0 : i == node) return true;
  return false;
}

std::string Selector::text() const {
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string encodeStatement(const Statement& s) {
  // nlohmann's object keeps its keys sorted: the same statement is the same bytes.
  return jsonData(json{{"type", kStatementType},
                       {"cluster", s.cluster},
                       {"nodes", s.selector.items},
                       {"declaration_digest", s.declarationDigest},
                       {"serial", s.serial},
                       {"pushed_at_ms", s.pushedAtMs},
                       {"pushed_by", s.pushedBy},
                       {"max_parallel_restarts", s.maxParallelRestarts}});
}

namespace {

template <typename T>
T required(const json& j, const char* name, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end()) throw InputError("{}: the statement has no \"{}\"", where, name);
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InputError("{}: the statement's \"{}\" has the wrong type", where, name);
  }
}

}  // namespace

Statement decodeStatement(std::string_view text, const std::string& where) {
  const json j = parseEtcdJson(text);
  if (!j.is_object() || j.value("type", json()) != kStatementType)
    throw InputError("{}: not a fleet statement (expected a JSON object of type \"{}\")", where,
                     kStatementType);
  Statement s;
  s.cluster = required<std::string>(j, "cluster", where);
  s.selector.items = required<std::vector<std::string>>(j, "nodes", where);
  s.declarationDigest = required<std::string>(j, "declaration_digest", where);
  s.serial = required<int64_t>(j, "serial", where);
  s.pushedAtMs = required<int64_t>(j, "pushed_at_ms", where);
  s.pushedBy = required<std::string>(j, "pushed_by", where);
  s.maxParallelRestarts = required<int64_t>(j, "max_parallel_restarts", where);
  if (s.serial < 0) throw InputError("{}: the statement's serial {} is negative", where, s.serial);
  if (s.maxParallelRestarts < 0)
    throw InputError("{}: the statement's max_parallel_restarts {} is negative", where,
                     s.maxParallelRestarts);
  if (s.selector.items.empty()) throw InputError("{}: the statement names no node", where);
  return s;
}

std::string encodePushed(const PushedDeclaration& p) {
  json j = {{"statement", p.statement}, {"signature", p.signature}};
  if (!p.text.empty()) j["declaration"] = p.text;
  return jsonData(j);
}

PushedDeclaration decodePushed(std::string_view text, const std::string& where) {
  const json j = parseEtcdJson(text);
  if (!j.is_object())
    throw InputError("{}: not a pushed declaration (expected a JSON object)", where);
  if (!j.contains("statement") && j.contains("declaration"))
    throw InputError(
        "{}: a pushed declaration in the format before signed statements (an older "
        "mesh-host pushed it); push it again with this mesh-host's fleet push",
        where);
  const auto str = [&](const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string())
      throw InputError("{}: not a pushed declaration (no \"{}\" text)", where, name);
    return it->get<std::string>();
  };
  PushedDeclaration p{str("statement"), str("signature"), ""};
  if (j.contains("declaration")) p.text = str("declaration");
  return p;
}

Statement peekStatement(const PushedDeclaration& p, const std::string& where) {
  return decodeStatement(p.statement, where);
}

Statement verifySignedStatement(const PushedDeclaration& p, const std::string& where,
                                const std::vector<trust::OperatorPublicKey>& trusted) {
  const auto signer =
      trust::verifySignedText(where, p.statement, p.signature, where + " (its signature)", trusted);
  Statement s = decodeStatement(p.statement, where);
  if (s.pushedBy != signer.text())
    throw InputError("{}: the statement says it was pushed by {} but is signed by {}", where,
                     s.pushedBy, signer.text());
  return s;
}

Statement verifyStatement(const PushedDeclaration& p, const std::string& where,
                          const std::vector<trust::OperatorPublicKey>& trusted) {
  Statement s = verifySignedStatement(p, where, trusted);
  const std::string digest = Digest::ofBytes(p.text).str();
  if (digest != s.declarationDigest)
    throw InputError(
        "{}: the declaration's bytes ({}) are not the ones the operator signed ({}) (tampered?)",
        where, shortDigest(digest), shortDigest(s.declarationDigest));
  return s;
}

std::string valueDigest(std::string_view value) {
  return Digest::ofBytes(value).str();
}

std::string shortDigest(const std::string& digest) {
  constexpr size_t kShown = 7 + 12;  // "sha256:" and 12 hex digits
  return digest.size() > kShown ? digest.substr(0, kShown) : digest;
}

}  // namespace mesh::fleet
