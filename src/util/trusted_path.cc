#include "util/trusted_path.hh"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>
#include <vector>

#include "util/error.hh"

namespace mesh {

namespace {

bool ownedByUs(const struct stat& st) {
  return st.st_uid == 0 || st.st_uid == ::geteuid();
}

// "/a/b/c" → "/", "/a", "/a/b", "/a/b/c".
std::vector<std::string> prefixesOf(const std::string& path) {
  std::vector<std::string> out{"/"};
  std::string at;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t end = path.find('/', i);
    if (end == std::string::npos) end = path.size();
    if (end > i) {
      at += "/" + path.substr(i, end - i);
      out.push_back(at);
    }
    i = end;
  }
  return out;
}

void requireTrustedDir(const std::string& shown, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) throw Error("{} is not a directory", shown);
  if (!ownedByUs(st))
    throw Error("{} belongs to uid {}, not to root or this user: refusing to keep records under it",
                shown, st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0)
    throw Error(
        "{} is writable by others (mode {:o}) and not sticky: refusing to keep records "
        "under it",
        shown, st.st_mode & 07777);
}

// Every directory of an already resolved path (no links on it).
void requireTrustedResolved(const std::string& resolved) {
  for (const auto& p : prefixesOf(resolved)) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) throwSys("cannot inspect " + p);
    requireTrustedDir(p, st);
  }
}

}  // namespace

void requireTrustedDirectory(const std::string& dir, bool mayBeMissing) {
  if (dir.empty() || dir[0] != '/') throw Error("{} is not an absolute path", dir);
  for (const auto& p : prefixesOf(dir)) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno == ENOENT && mayBeMissing) return;
      throwSys("cannot inspect " + p);
    }
    if (!S_ISLNK(st.st_mode)) {
      requireTrustedDir(p, st);
      continue;
    }
    // A link: its directory was checked above; the link itself and everything its
    // target passes through must be ours too.
    if (!ownedByUs(st))
      throw Error("{} is a link of uid {}, not of root or this user: refusing to follow it", p,
                  st.st_uid);
    std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(p.c_str(), nullptr),
                                                         &std::free);
    if (!resolved) {
      if (errno == ENOENT && mayBeMissing) return;
      throwSys("cannot resolve " + p);
    }
    requireTrustedResolved(resolved.get());
  }
}

}  // namespace mesh
