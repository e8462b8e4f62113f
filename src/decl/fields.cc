#include "decl/fields.hh"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include "decl/unit_keys.hh"

namespace mesh::decl {

namespace {

bool isOctalDigit(char c) {
  return c >= '0' && c <= '7';
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isLower(char c) {
  return c >= 'a' && c <= 'z';
}
bool isAlpha(char c) {
  return isLower(c) || (c >= 'A' && c <= 'Z');
}

// Bytes that must never reach a terminal raw: C0 controls and DEL.
bool isControl(char c) {
  auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// A control character as it is written in messages: \n, \t, \r or \xHH.
std::string escaped(char c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    default:
      return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
}

// systemd's directive names: letters and digits, starting with a letter; or an
// extension key, "X-" and then letters, digits and dashes (systemd ignores those;
// X-LogMaxBytes is the built-in supervisor's own).
bool validUnitKey(std::string_view s) {
  if (s.starts_with("X-")) {
    s.remove_prefix(2);
    return !s.empty() && isAlpha(s[0]) && std::all_of(s.begin(), s.end(), [](char c) {
      return isAlpha(c) || isDigit(c) || c == '-';
    });
  }
  if (s.empty() || !isAlpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return isAlpha(c) || isDigit(c); });
}

}  // namespace

std::string_view typeName(toml::node_type type) {
  switch (type) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "a value";
}

Position positionOf(const Diagnostics& diags, const toml::source_region& source) {
  const int line = static_cast<int>(source.begin.line);
  return diags.at(line == 0 ? 0 : line + diags.linesBefore(),
                  static_cast<int>(source.begin.column));
}

std::string shown(std::string_view value) {
  constexpr size_t kMax = 200;
  size_t cut = std::min(value.size(), kMax);
  // Cut before a UTF-8 continuation byte, never inside a character.
  while (cut > 0 && cut < value.size() && (static_cast<unsigned char>(value[cut]) & 0xc0) == 0x80)
    --cut;
  std::string out;
  for (char c : value.substr(0, cut)) {
    if (isControl(c))
      out += escaped(c);
    else
      out += c;
  }
  if (cut < value.size()) out += "…";
  return out;
}

std::optional<std::string> controlProblem(std::string_view value) {
  auto it = std::find_if(value.begin(), value.end(), isControl);
  if (it == value.end()) return std::nullopt;
  return fmt::format("contains a control character ({} at byte {}); remove it", escaped(*it),
                     it - value.begin() + 1);
}

bool validName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return isAlpha(c) || isDigit(c) || c == '_' || c == '-';
  });
}

std::optional<std::string> pathProblem(std::string_view path) {
  if (path.empty()) return "is empty; write an absolute path like \"/etc/app.conf\"";
  if (auto problem = controlProblem(path)) return problem;
  if (path[0] != '/') return "is not absolute; write the full path, starting with '/'";
  if (path == "/") return "is the root directory; manage a path below '/'";
  if (path.back() == '/') return "ends with '/'; remove the trailing slash";
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = std::min(path.find('/', start), path.size());
    std::string_view part = path.substr(start, end - start);
    if (part.empty()) return "has an empty component ('//'); write single slashes";
    if (part == "." || part == "..")
      return fmt::format("has a '{}' component; write the path without '.' or '..'", part);
    start = end + 1;
  }
  return std::nullopt;
}

Fields::Fields(const toml::table& table, Position tablePos, std::string subject, Diagnostics& diags)
    : table_(table), tablePos_(std::move(tablePos)), subject_(std::move(subject)), diags_(diags) {}

Position Fields::at(const toml::node& node) const {
  return positionOf(diags_, node.source());
}

void Fields::rejectUnknown(std::initializer_list<std::string_view> allowed,
                           std::initializer_list<std::string_view> alsoHandled) {
  for (auto&& [key, value] : table_) {
    if (std::find(alsoHandled.begin(), alsoHandled.end(), key.str()) != alsoHandled.end()) continue;
    if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
    hadUnknownKeys_ = true;
    error(positionOf(diags_, key.source()),
          fmt::format("unknown key '{}' in {}; allowed keys: {}", shown(key.str()), subject_,
                      fmt::join(allowed, ", ")));
  }
}

void Fields::missing(std::string_view key, std::string_view example) {
  if (hadUnknownKeys_) return;
  error(tablePos_, fmt::format("{} has no '{}'; add it, e.g. {}", subject_, key, example));
}

void Fields::wrongType(std::string_view key, const toml::node& node, std::string_view expected) {
  error(at(node), fmt::format("'{}' in {} must be {}, not {}", key, subject_, expected,
                              typeName(node.type())));
}

std::optional<std::string> Fields::string(std::string_view key, Text text) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  const auto* s = n->as_string();
  if (!s) {
    wrongType(key, *n, "a string");
    return std::nullopt;
  }
  const std::string& v = s->get();
  if (text != Text::Any && v.empty()) {
    error(at(*n), fmt::format("'{}' in {} is empty; give it a value", key, subject_));
    return std::nullopt;
  }
  if (text == Text::Line && v.find_first_of(std::string_view("\0\n\r", 3)) != std::string::npos) {
    error(at(*n), fmt::format("'{}' in {} contains a line break or NUL; write it on one line", key,
                              subject_));
    return std::nullopt;
  }
  if (text == Text::Plain) {
    if (auto problem = controlProblem(v)) {
      error(at(*n), fmt::format("{} '{}' in {} {}", key, shown(v), subject_, *problem));
      return std::nullopt;
    }
  }
  return v;
}

std::optional<std::string> Fields::substitute(std::string_view key, const toml::node& n,
                                              std::string v) {
  if (!placeholders_) return v;
  if (auto problem = placeholderProblem(v, *placeholders_)) {
    error(at(n), fmt::format("{} in {} {}", key, subject_, *problem));
    return std::nullopt;
  }
  return substitutePlaceholders(v, *placeholders_);
}

std::optional<std::string> Fields::substituted(std::string_view key, Text text) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  auto v = string(key, text);
  if (!v) return std::nullopt;
  auto out = substitute(key, *n, std::move(*v));
  if (out && text == Text::Plain)
    if (auto problem = controlProblem(*out)) {
      error(at(*n), fmt::format("{} '{}' in {} {} (once {{node}} and {{cluster}} are replaced)",
                                key, shown(*out), subject_, *problem));
      return std::nullopt;
    }
  return out;
}

std::optional<std::string> Fields::path(std::string_view key) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  auto v = substituted(key);
  if (!v) return std::nullopt;
  if (auto problem = pathProblem(*v)) {
    error(at(*n), fmt::format("{} '{}' in {} {}", key, shown(*v), subject_, *problem));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Fields::boolean(std::string_view key) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  const auto* b = n->as_boolean();
  if (!b) {
    wrongType(key, *n, "a boolean (true or false)");
    return std::nullopt;
  }
  return b->get();
}

std::optional<mode_t> Fields::mode(std::string_view key) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  if (const auto* s = n->as_string()) {
    const std::string& v = s->get();
    if ((v.size() != 3 && v.size() != 4) || !std::all_of(v.begin(), v.end(), isOctalDigit)) {
      error(at(*n), fmt::format("{} \"{}\" in {} is not an octal mode; write 3 or 4 octal "
                                "digits, e.g. \"0644\" or \"1777\"",
                                key, shown(v), subject_));
      return std::nullopt;
    }
    return static_cast<mode_t>(std::stoul(v, nullptr, 8));
  }
  if (const auto* i = n->as_integer()) {
    int64_t v = i->get();
    auto base = i->flags() & toml::value_flags::format_as_hexadecimal;
    if (base != toml::value_flags::format_as_octal) {
      std::string digits = fmt::format("{}", v);
      bool looksOctal = base == toml::value_flags::none && digits.size() <= 4 &&
                        std::all_of(digits.begin(), digits.end(), isOctalDigit);
      if (looksOctal) {
        std::string padded = fmt::format("{:0>4}", digits);
        error(at(*n), fmt::format("{} {} in {} is a decimal integer, not an octal mode; write "
                                  "it as \"{}\" or 0o{}",
                                  key, v, subject_, padded, digits));
      } else {
        error(at(*n), fmt::format("{} in {} is not written in octal; write it as a string of "
                                  "octal digits (\"0644\") or an octal integer (0o644)",
                                  key, subject_));
      }
      return std::nullopt;
    }
    if (v < 0 || v > 07777) {
      error(at(*n), fmt::format("{} 0o{:o} in {} is out of range; a mode is at most 0o7777", key, v,
                                subject_));
      return std::nullopt;
    }
    return static_cast<mode_t>(v);
  }
  wrongType(key, *n, "a string of octal digits (\"0644\") or an octal integer (0o644)");
  return std::nullopt;
}

// User and group names as useradd accepts them: ^[a-z_][a-z0-9_.-]*\$?$, at most 32.
bool validPrincipalName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  if (s.back() == '$') s.remove_suffix(1);
  if (s.empty() || !(isLower(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return isLower(c) || isDigit(c) || c == '_' || c == '.' || c == '-';
  });
}

std::optional<Principal> Fields::principal(std::string_view key, PrincipalKind kind,
                                           const ParseOptions& options) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  auto v = string(key);
  if (!v) return std::nullopt;
  const char* what = kind == PrincipalKind::User ? "user" : "group";
  bool numeric = !v->empty() && std::all_of(v->begin(), v->end(), isDigit);
  if (numeric) {
    uint64_t id = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), id);
    if (ec != std::errc() || id >= 0xffffffffu) {
      error(at(*n), fmt::format("{} '{}' in {} is out of range; a numeric {} id is below "
                                "4294967295",
                                key, shown(*v), subject_, what));
      return std::nullopt;
    }
    return Principal{*v};
  }
  if (!validPrincipalName(*v)) {
    error(at(*n), fmt::format("{} '{}' in {} is not a valid {} name; write a numeric id or a name "
                              "of lowercase letters, digits, '_', '-' and '.' starting with a "
                              "letter or '_' (at most 32 characters)",
                              key, shown(*v), subject_, what));
    return std::nullopt;
  }
  // Collected: checked once every resource is read, when an account declared
  // beside it may be the one it names (decl/accounts.hh).
  if (accounts_) {
    accounts_->push_back(AccountRef{*v, kind == PrincipalKind::Group, at(*n), std::string(key)});
    return Principal{*v};
  }
  const auto& exists = kind == PrincipalKind::User ? options.userExists : options.groupExists;
  if (exists && !exists(*v)) {
    error(at(*n), fmt::format("no {} '{}' on this node ({} of {}); create it first or write a "
                              "numeric id",
                              what, *v, key, subject_));
    return std::nullopt;
  }
  return Principal{*v};
}

std::optional<Digest> Fields::digest(std::string_view key) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  auto v = string(key);
  if (!v) return std::nullopt;
  auto d = Digest::parse(*v);
  if (!d)
    error(at(*n), fmt::format("{} '{}' in {} is not a valid digest; write "
                              "\"sha256:<64 lowercase hex digits>\"",
                              key, shown(*v), subject_));
  return d;
}

std::optional<uint64_t> Fields::positive(std::string_view key) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  const auto* i = n->as_integer();
  if (!i) {
    wrongType(key, *n, "a positive integer");
    return std::nullopt;
  }
  if (i->get() <= 0) {
    error(at(*n),
          fmt::format("{} in {} is {}; it must be a positive integer", key, subject_, i->get()));
    return std::nullopt;
  }
  return static_cast<uint64_t>(i->get());
}

std::vector<Ref> Fields::ids(std::string_view key) {
  std::vector<Ref> refs;
  const toml::node* n = find(key);
  if (!n) return refs;
  const auto* array = n->as_array();
  if (!array) {
    wrongType(key, *n, "an array of ids, e.g. [\"module.name\"]");
    return refs;
  }
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    if (!s) {
      error(at(element), fmt::format("'{}' in {} lists {}; every entry must be an id string "
                                     "like \"module.name\"",
                                     key, subject_, typeName(element.type())));
      continue;
    }
    bool seen = std::any_of(refs.begin(), refs.end(), [&](const Ref& r) { return r.id == **s; });
    if (!seen) refs.push_back(Ref{s->get(), at(element)});
  }
  return refs;
}

std::optional<std::map<std::string, UnitValue>> Fields::unit(std::string_view key,
                                                             bool requireExecStart) {
  const toml::node* n = find(key);
  if (!n) return std::nullopt;
  const auto* table = n->as_table();
  if (!table) {
    wrongType(key, *n, "a table, e.g. unit = { ExecStart = \"{bundle}/bin/app\" }");
    return std::nullopt;
  }
  std::map<std::string, UnitValue> unit;
  bool ok = true;
  auto bad = [&](const toml::node& where, std::string message) {
    error(at(where), std::move(message));
    ok = false;
  };
  auto oneLine = [](const std::string& s) { return s.find_first_of("\n\r") == s.npos; };
  for (auto&& [k, value] : *table) {
    std::string name(k.str());
    if (!validUnitKey(name)) {
      error(positionOf(diags_, k.source()),
            fmt::format("unit key '{}' in {} is not a unit directive name; use letters and "
                        "digits, starting with a letter (e.g. ExecStart), or an extension key "
                        "(X-Name)",
                        shown(name), subject_));
      ok = false;
      continue;
    }
    UnitValue lines;
    const std::string where = fmt::format("{}.{}", key, name);
    if (const auto* s = value.as_string()) {
      if (auto v = substitute(where, value, s->get()))
        lines.push_back(std::move(*v));
      else
        ok = false;
    } else if (const auto* array = value.as_array()) {
      for (const toml::node& element : *array) {
        if (const auto* es = element.as_string()) {
          if (auto v = substitute(where, element, es->get()))
            lines.push_back(std::move(*v));
          else
            ok = false;
        } else
          bad(element, fmt::format("{}.{} in {} lists {}; every entry must be a string", key, name,
                                   subject_, typeName(element.type())));
      }
    } else {
      bad(value, fmt::format("{}.{} in {} must be a string or an array of strings, not {}", key,
                             name, subject_, typeName(value.type())));
      continue;
    }
    if (!std::all_of(lines.begin(), lines.end(), oneLine))
      bad(value, fmt::format("{}.{} in {} contains a line break; give several lines as an "
                             "array of strings",
                             key, name, subject_));
    else if (auto problem = unitKeyProblem(name, lines, subject_))
      bad(value, *problem);
    unit[name] = std::move(lines);
  }
  auto exec = unit.find("ExecStart");
  if (!requireExecStart) return ok ? std::optional(std::move(unit)) : std::nullopt;
  if (exec == unit.end()) {
    error(at(*n), fmt::format("unit of {} has no ExecStart; add e.g. ExecStart = "
                              "\"{{bundle}}/bin/app\"",
                              subject_));
    return std::nullopt;
  }
  if (exec != unit.end() && std::all_of(exec->second.begin(), exec->second.end(),
                                        [](const std::string& s) { return s.empty(); })) {
    error(at(*n), fmt::format("unit.ExecStart of {} is empty; give the command to run", subject_));
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return unit;
}

}  // namespace mesh::decl
