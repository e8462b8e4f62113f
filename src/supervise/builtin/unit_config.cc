#include "supervise/builtin/unit_config.hh"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "util/error.hh"
#include "util/unit_keys.hh"

namespace mesh::supervise::builtin {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool validEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'a':
      return '\a';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case 's':
      return ' ';
    default:
      return c;
  }
}

// The value of one key, after the resets an empty assignment makes.
const std::string* single(const ServiceKeys& keys, const char* key) {
  auto it = keys.find(key);
  if (it == keys.end() || it->second.empty()) return nullptr;
  if (it->second.size() > 1)
    throw Error("{}= is given {} times; it takes one value", key, it->second.size());
  return &it->second.front();
}

int64_t timeSpan(const ServiceKeys& keys, const char* key, int64_t fallback) {
  const std::string* v = single(keys, key);
  if (!v) return fallback;
  auto us = parseTimeSpanUs(*v);
  if (!us) throw Error("{}={}: not a time span (e.g. 5, 5s, 500ms, 1min)", key, *v);
  return *us;
}

// The last of a key's values (systemd: a later assignment wins), or nullptr.
const std::string* last(const ServiceKeys& keys, const char* key) {
  auto it = keys.find(key);
  return it == keys.end() || it->second.empty() ? nullptr : &it->second.back();
}

}  // namespace

ServiceKeys parseServiceSection(std::string_view text) {
  ServiceKeys keys;
  bool inService = false;
  std::string pending;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view raw = text.substr(pos, eol - pos);
    pos = eol + 1;
    std::string_view line = trim(raw);
    if (pending.empty() && (line.empty() || line[0] == '#' || line[0] == ';')) continue;
    if (!line.empty() && line.back() == '\\') {
      pending.append(line.substr(0, line.size() - 1)).push_back(' ');
      continue;
    }
    std::string full = pending + std::string(line);
    pending.clear();
    std::string_view l = trim(full);
    if (l.empty()) continue;
    if (l.front() == '[') {
      inService = l == "[Service]";
      continue;
    }
    auto eq = l.find('=');
    if (!inService || eq == std::string_view::npos) continue;
    std::string key(trim(l.substr(0, eq)));
    std::string value(trim(l.substr(eq + 1)));
    auto& values = keys[key];
    if (value.empty())
      values.clear();
    else
      values.push_back(std::move(value));
  }
  return keys;
}

std::vector<std::string> splitWords(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isSpace(line[i])) ++i;
    if (i >= line.size()) break;
    std::string word;
    char quote = 0;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote == 0 && isSpace(c)) break;
      if (c == '\\' && i + 1 < line.size()) {
        word.push_back(unescape(line[++i]));
      } else if (quote != 0 && c == quote) {
        quote = 0;
      } else if (quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else {
        word.push_back(c);
      }
    }
    if (quote != 0) throw Error("unterminated {} quote in: {}", quote, line);
    words.push_back(std::move(word));
  }
  return words;
}

EnvVars parseEnvironmentValue(std::string_view value) {
  EnvVars vars;
  for (auto& word : splitWords(value)) {
    auto eq = word.find('=');
    if (eq == std::string::npos || !validEnvName(std::string_view(word).substr(0, eq)))
      throw Error("Environment={}: \"{}\" is not NAME=VALUE", value, word);
    vars.emplace_back(word.substr(0, eq), word.substr(eq + 1));
  }
  return vars;
}

EnvVars parseEnvironmentFile(std::string_view text) {
  EnvVars vars;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = trim(text.substr(pos, eol - pos));
    pos = eol + 1;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.substr(0, 7) == "export ") line = trim(line.substr(7));
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = trim(line.substr(0, eq));
    std::string_view v = trim(line.substr(eq + 1));
    if (!validEnvName(name)) continue;
    std::string value;
    if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
      value = v.substr(1, v.size() - 2);
    } else if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
      std::string_view inner = v.substr(1, v.size() - 2);
      for (size_t i = 0; i < inner.size(); ++i) {
        if (inner[i] == '\\' && i + 1 < inner.size()) {
          char n = inner[++i];
          value.push_back(n == 'n' ? '\n' : n);
        } else {
          value.push_back(inner[i]);
        }
      }
    } else {
      value = v;
    }
    vars.emplace_back(std::string(name), std::move(value));
  }
  return vars;
}

std::vector<std::string> substituteEnvironment(const std::vector<std::string>& argv,
                                               const std::map<std::string, std::string>& env) {
  auto lookup = [&](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  std::vector<std::string> out;
  for (const auto& word : argv) {
    if (word.size() > 1 && word[0] == '$' && validEnvName(std::string_view(word).substr(1))) {
      for (auto& part : splitWords(lookup(word.substr(1)))) out.push_back(part);
      continue;
    }
    std::string w;
    for (size_t i = 0; i < word.size(); ++i) {
      if (word[i] == '$' && i + 1 < word.size() && word[i + 1] == '$') {
        w.push_back('$');
        ++i;
      } else if (word[i] == '$' && i + 1 < word.size() && word[i + 1] == '{') {
        auto close = word.find('}', i + 2);
        std::string name =
            close == std::string::npos ? std::string() : word.substr(i + 2, close - i - 2);
        if (!validEnvName(name)) {
          w.push_back('$');
          continue;
        }
        w += lookup(name);
        i = close;
      } else {
        w.push_back(word[i]);
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

// An Exec…= value: its prefixes ('-', '@', ':'; '+' and '!' refused), then the words.
ServiceConfig::Command parseCommand(const char* key, const std::string& value) {
  ServiceConfig::Command c;
  std::string_view cmd = value;
  bool separateArgv0 = false;
  while (!cmd.empty() && std::string_view("-@:+!").find(cmd.front()) != std::string_view::npos) {
    char p = cmd.front();
    if (p == '+' || p == '!')
      throw Error("{}={}: the '{}' prefix is not supported by the builtin supervisor", key, value,
                  p);
    if (p == '-') c.ignoreFailure = true;
    if (p == '@') separateArgv0 = true;
    if (p == ':') c.substitute = false;
    cmd.remove_prefix(1);
  }
  c.argv = splitWords(cmd);
  if (c.argv.empty() || (separateArgv0 && c.argv.size() < 2))
    throw Error("{}={}: no command", key, value);
  c.execPath = c.argv.front();
  if (separateArgv0) c.argv.erase(c.argv.begin());
  return c;
}

}  // namespace

ServiceConfig parseServiceConfig(const ServiceKeys& keys) {
  ServiceConfig c;
  const std::string* exec = single(keys, "ExecStart");
  if (!exec) throw Error("the unit has no ExecStart= in [Service]");
  auto start = parseCommand("ExecStart", *exec);
  c.argv = std::move(start.argv);
  c.execPath = std::move(start.execPath);
  c.ignoreFailure = start.ignoreFailure;
  c.substitute = start.substitute;
  if (const std::string* reload = last(keys, "ExecReload"))
    c.reload = parseCommand("ExecReload", *reload);

  if (auto it = keys.find("Environment"); it != keys.end())
    for (const auto& v : it->second)
      for (auto& kv : parseEnvironmentValue(v)) c.environment.push_back(std::move(kv));
  if (auto it = keys.find("EnvironmentFile"); it != keys.end())
    for (const auto& v : it->second) {
      ServiceConfig::EnvFile f;
      f.optional = !v.empty() && v[0] == '-';
      f.path = f.optional ? v.substr(1) : v;
      if (f.path.empty() || f.path[0] != '/')
        throw Error("EnvironmentFile={}: the path must be absolute", v);
      c.environmentFiles.push_back(std::move(f));
    }
  if (const std::string* wd = single(keys, "WorkingDirectory")) {
    c.workingDirectoryOptional = (*wd)[0] == '-';
    c.workingDirectory = c.workingDirectoryOptional ? wd->substr(1) : *wd;
    if (c.workingDirectory.empty() || c.workingDirectory[0] != '/')
      throw Error("WorkingDirectory={}: the path must be absolute", *wd);
  }
  if (const std::string* t = last(keys, "Type"); t && *t == "notify") c.type = ServiceType::Notify;
  if (const std::string* a = last(keys, "NotifyAccess")) {
    if (*a == "none")
      c.notifyAccess = NotifyAccess::None;
    else if (*a == "main" || *a == "exec")
      c.notifyAccess = NotifyAccess::Main;
    else if (*a == "all")
      c.notifyAccess = NotifyAccess::All;
    else
      throw Error("NotifyAccess={}: expected none, main, exec or all", *a);
  }
  if (const std::string* u = single(keys, "User")) c.user = *u;
  if (const std::string* g = single(keys, "Group")) c.group = *g;
  if (const std::string* r = single(keys, "Restart")) {
    static const std::pair<const char*, RestartPolicy> kPolicies[] = {
        {"no", RestartPolicy::No},
        {"always", RestartPolicy::Always},
        {"on-success", RestartPolicy::OnSuccess},
        {"on-failure", RestartPolicy::OnFailure},
        {"on-abnormal", RestartPolicy::OnAbnormal},
        {"on-abort", RestartPolicy::OnAbort},
        {"on-watchdog", RestartPolicy::No}};  // no watchdog here: never triggers
    bool known = false;
    for (auto& [name, policy] : kPolicies)
      if (*r == name) {
        c.restart = policy;
        known = true;
      }
    if (!known)
      throw Error(
          "Restart={}: expected no, always, on-success, on-failure, on-abnormal or on-abort", *r);
  }
  c.restartUs = timeSpan(keys, "RestartSec", c.restartUs);
  if (c.restartUs == kInfinity) throw Error("RestartSec=infinity: a restart delay must be finite");
  c.timeoutStopUs = timeSpan(keys, "TimeoutStopSec", c.timeoutStopUs);
  if (c.timeoutStopUs == 0) c.timeoutStopUs = kInfinity;  // systemd: 0 turns the timeout off
  c.timeoutStartUs = timeSpan(keys, "TimeoutStartSec", c.timeoutStartUs);
  if (c.timeoutStartUs == 0) c.timeoutStartUs = kInfinity;
  if (const std::string* m = single(keys, "X-LogMaxBytes")) {
    char* end = nullptr;
    unsigned long long n = std::strtoull(m->c_str(), &end, 10);
    if (end == m->c_str() || *end != '\0' || n < 64)
      throw Error("X-LogMaxBytes={}: expected a number of bytes (at least 64)", *m);
    c.logMaxBytes = n;
  }
  return c;
}

std::vector<std::string> unsupportedServiceKeys(const ServiceKeys& keys) {
  std::vector<std::string> out;
  for (const auto& [key, values] : keys) {
    const UnitKey* row = findUnitKey(key);
    // An extension key: systemd ignores it, and so does the built-in supervisor.
    if (!row && key.starts_with("X-")) continue;
    if (!row || !row->builtinHonours) {
      out.push_back(key);
    } else if (!row->builtinChoices.empty()) {  // Type=, Restart=
      for (const auto& v : values)
        if (std::find(row->builtinChoices.begin(), row->builtinChoices.end(), v) ==
            row->builtinChoices.end())
          out.push_back(key + "=" + v);
    } else if (key == "ExecStart") {
      for (const auto& v : values) {
        auto prefix = v.substr(0, v.find_first_not_of("-@:+!"));
        if (prefix.find_first_of("+!") != std::string::npos)
          out.push_back("ExecStart=" + prefix + "…");
      }
      if (values.size() > 1) out.push_back("ExecStart (given more than once)");
    } else if (key == "ExecReload") {
      for (const auto& v : values) {
        auto prefix = v.substr(0, v.find_first_not_of("-@:+!"));
        if (prefix.find_first_of("+!") != std::string::npos)
          out.push_back("ExecReload=" + prefix + "…");
      }
      if (values.size() > 1) out.push_back("ExecReload (given more than once: only the last runs)");
    }
  }
  return out;
}

}  // namespace mesh::supervise::builtin
