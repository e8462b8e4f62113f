#include "supervise/systemd/unit_dir.hh"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "supervise/supervisor.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::sdbus {

namespace {

std::optional<std::string> readLink(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  if (n < 0) {
    if (errno == ENOENT || errno == EINVAL || errno == ENOTDIR) return std::nullopt;
    throwSys(fmt::format("cannot read link {}", path));
  }
  return std::string(buf, static_cast<size_t>(n));
}

// Removes a symlink (never anything else) and syncs its directory.
bool unlinkLink(const std::string& path) {
  auto st = lstatPath(path);
  if (!st || !S_ISLNK(st->st_mode)) return false;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throwSys(fmt::format("cannot remove {}", path));
  syncDir(parentOf(path));
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

void UnitDir::checkName(const std::string& name) {
  constexpr std::string_view suffix = ".service";
  bool ok = name.size() > suffix.size() && name.size() <= 255 &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
            name.find('/') == std::string::npos && name.find('\0') == std::string::npos &&
            name.front() != '.';
  if (!ok) throw Error("'{}' is not a service name: expected <name>.service", name);
}

std::vector<std::string> UnitDir::enableLinks(const std::string& name, std::string_view text) {
  std::vector<std::string> links;
  bool inInstall = false;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      inInstall = line == "[Install]";
      continue;
    }
    auto eq = line.find('=');
    if (!inInstall || eq == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, eq)), values = line.substr(eq + 1);
    const char* kind = key == "WantedBy"     ? ".wants/"
                       : key == "RequiredBy" ? ".requires/"
                       : key == "UpheldBy"   ? ".upholds/"
                                             : nullptr;
    if (!kind) continue;
    while (!(values = trim(values)).empty()) {
      auto sp = values.find_first_of(" \t");
      std::string link = std::string(values.substr(0, sp)) + kind + name;
      if (std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
      values = sp == std::string_view::npos ? std::string_view() : values.substr(sp);
    }
  }
  return links;
}

std::optional<std::string> UnitDir::read(const std::string& name) const {
  return readFile(unitPath(name));
}

bool UnitDir::enabled(const std::string& name, std::string_view text) const {
  for (const auto& link : enableLinks(name, text)) {
    auto st = lstatPath(dir_ + "/" + link);
    if (!st || !S_ISLNK(st->st_mode)) return false;
  }
  return true;
}

bool UnitDir::install(const std::string& name, std::string_view text) {
  checkName(name);
  bool changed = false;
  auto current = read(name);
  if (!current || *current != text) {
    atomicWrite(unitPath(name), text, 0644);
    changed = true;
  }
  // Relative, as `systemctl enable` writes it for a unit in this directory; it
  // also resolves when the directory is seen under another path (a container).
  const std::string target = "../" + name;
  auto wanted = enableLinks(name, text);
  for (const auto& link : wanted) {
    if (readLink(dir_ + "/" + link) == target) continue;
    atomicSymlink(dir_ + "/" + link, target);
    changed = true;
  }
  if (current)
    for (const auto& link : enableLinks(name, *current))
      if (std::find(wanted.begin(), wanted.end(), link) == wanted.end())
        changed = unlinkLink(dir_ + "/" + link) || changed;
  return changed;
}

bool UnitDir::remove(const std::string& name) {
  checkName(name);
  bool changed = false;
  auto current = read(name);
  auto links = enableLinks(name, current.value_or(""));
  links.push_back("multi-user.target.wants/" + name);  // the default, whatever the text says
  for (const auto& link : links) changed = unlinkLink(dir_ + "/" + link) || changed;
  if (::unlink(unitPath(name).c_str()) == 0) {
    changed = true;
    syncDir(dir_);
  } else if (errno != ENOENT) {
    throwSys(fmt::format("cannot remove {}", unitPath(name)));
  }
  return changed;
}

std::optional<std::string> UnitDir::readDropin(const std::string& name) const {
  checkName(name);
  return readFile(dir_ + "/" + name + ".d/" + kDropinName);
}

bool UnitDir::writeDropin(const std::string& name, std::string_view text) {
  if (readDropin(name) == std::optional<std::string>(text)) return false;
  atomicWrite(dir_ + "/" + name + ".d/" + kDropinName, text, 0644);
  return true;
}

bool UnitDir::removeDropin(const std::string& name) {
  checkName(name);
  const std::string dir = dir_ + "/" + name + ".d";
  const std::string file = dir + "/" + kDropinName;
  if (::unlink(file.c_str()) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    throwSys(fmt::format("cannot remove {}", file));
  }
  syncDir(dir);
  // Only when empty: an operator's own drop-ins stay, and their directory.
  if (::rmdir(dir.c_str()) == 0) syncDir(dir_);
  return true;
}

bool UnitDir::linked(const std::vector<std::string>& links) const {
  for (const auto& l : links) {
    auto st = lstatPath(dir_ + "/" + l);
    if (!st || !S_ISLNK(st->st_mode)) return false;
  }
  return true;
}

bool UnitDir::link(const std::vector<std::string>& links, const std::string& target) {
  bool changed = false;
  for (const auto& l : links) {
    if (readLink(dir_ + "/" + l) == target) continue;
    atomicSymlink(dir_ + "/" + l, target);
    changed = true;
  }
  return changed;
}

bool UnitDir::unlink(const std::vector<std::string>& links) {
  bool changed = false;
  for (const auto& l : links) changed = unlinkLink(dir_ + "/" + l) || changed;
  return changed;
}

}  // namespace mesh::supervise::sdbus
