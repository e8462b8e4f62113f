#include "util/accounts.hh"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <type_traits>

namespace mesh {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(
        s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

std::optional<uint32_t> number(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string etcFile(const std::string& root, const char* name) {
  return (root == "/" ? std::string() : root) + "/etc/" + name;
}

template <typename F>
void eachLine(const std::string& path, F&& f) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#' && line[0] != '+' && line[0] != '-') f(line);
}

template <typename Entry, typename Lookup>
std::optional<uint32_t> nss(const std::string& name, int sizeHint, Lookup lookup) {
  long hint = ::sysconf(sizeHint);
  std::vector<char> buffer(hint > 0 ? static_cast<size_t>(hint) : 16384);
  for (;;) {
    Entry entry{};
    Entry* result = nullptr;
    int rc = lookup(name.c_str(), &entry, buffer.data(), buffer.size(), &result);
    if (rc == ERANGE && buffer.size() < (size_t{1} << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (rc != 0 || !result) return std::nullopt;
    if constexpr (std::is_same_v<Entry, struct passwd>)
      return result->pw_uid;
    else
      return result->gr_gid;
  }
}

}  // namespace

std::optional<UserEntry> parsePasswdLine(std::string_view line) {
  const auto f = split(line, ':');
  if (f.size() != 7 || f[0].empty()) return std::nullopt;
  auto uid = number(f[2]), gid = number(f[3]);
  if (!uid || !gid) return std::nullopt;
  return UserEntry{std::string(f[0]), *uid, *gid, std::string(f[5]), std::string(f[6])};
}

std::optional<GroupEntry> parseGroupLine(std::string_view line) {
  const auto f = split(line, ':');
  if (f.size() != 4 || f[0].empty()) return std::nullopt;
  auto gid = number(f[2]);
  if (!gid) return std::nullopt;
  GroupEntry g{std::string(f[0]), *gid, {}};
  if (!f[3].empty())
    for (auto m : split(f[3], ',')) g.members.emplace_back(m);
  return g;
}

std::optional<UserEntry> readUser(const std::string& root, std::string_view name) {
  std::optional<UserEntry> found;
  eachLine(etcFile(root, "passwd"), [&](const std::string& line) {
    if (found) return;
    if (auto u = parsePasswdLine(line); u && u->name == name) found = std::move(u);
  });
  return found;
}

std::vector<GroupEntry> readGroups(const std::string& root) {
  std::vector<GroupEntry> out;
  eachLine(etcFile(root, "group"), [&](const std::string& line) {
    if (auto g = parseGroupLine(line)) out.push_back(std::move(*g));
  });
  return out;
}

std::optional<GroupEntry> readGroup(const std::string& root, std::string_view name) {
  for (auto& g : readGroups(root))
    if (g.name == name) return std::move(g);
  return std::nullopt;
}

Accounts::Accounts(std::string root)
    : root_(std::move(root)),
      files_(root_ != "/" && ::access(etcFile(root_, "passwd").c_str(), F_OK) == 0) {}

std::optional<uid_t> Accounts::uid(const std::string& name) const {
  if (auto n = number(name)) return *n;
  if (files_) {
    if (auto u = readUser(root_, name)) return u->uid;
    return std::nullopt;
  }
  return nss<struct passwd>(name, _SC_GETPW_R_SIZE_MAX, ::getpwnam_r);
}

std::optional<gid_t> Accounts::gid(const std::string& name) const {
  if (auto n = number(name)) return *n;
  if (files_) {
    if (auto g = readGroup(root_, name)) return g->gid;
    return std::nullopt;
  }
  return nss<struct group>(name, _SC_GETGR_R_SIZE_MAX, ::getgrnam_r);
}

}  // namespace mesh
