#include "trust/key_file.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::trust {

namespace {

// `path` as one shell word, for a command the message suggests.
std::string shellWord(const std::string& path) {
  const bool plain = !path.empty() && path.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./+-:@,=%") == std::string::npos;
  if (plain) return path;
  std::string out = "'";
  for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const char* typeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string fileNoun(KeyFileKind kind) {
  return kind == KeyFileKind::Private ? "private key file" : "key file";
}

// "readable and writable by group and others" for the bits of `bad` (07 and 070 parts).
std::string describeAccess(mode_t bad) {
  std::string how;
  if ((bad & 044) && (bad & 022))
    how = "readable and writable";
  else if (bad & 022)
    how = "writable";
  else if (bad & 044)
    how = "readable";
  else
    how = "accessible";
  const char* who = (bad & 070) && (bad & 007) ? "group and others"
                    : (bad & 070)              ? "group"
                                               : "others";
  return how + " by " + who;
}

}  // namespace

std::optional<std::string> keyFileFault(const struct stat& st, const std::string& path,
                                        KeyFileKind kind, uid_t self) {
  if (!S_ISREG(st.st_mode))
    return fmt::format(
        "refusing {} {}: it is {}, not a regular file; put the key file itself there",
        fileNoun(kind), path, typeName(st.st_mode));
  std::vector<std::string> faults, fixes;
  if (st.st_uid != 0 && st.st_uid != self) {
    faults.push_back(self == 0 ? fmt::format("owned by uid {}, not by root", st.st_uid)
                               : fmt::format("owned by uid {}, neither root nor the user running "
                                             "mesh-host (uid {})",
                                             st.st_uid, self));
    fixes.push_back("chown root " + shellWord(path));
  }
  const mode_t mode = st.st_mode & 07777;
  const mode_t bad = mode & (kind == KeyFileKind::Private ? mode_t{077} : mode_t{022});
  if (bad != 0) {
    faults.push_back(
        fmt::format("{} (mode {:04o}){}", describeAccess(bad), mode,
                    kind == KeyFileKind::Private ? ": an unprotected private key" : ""));
    fixes.push_back(
        fmt::format("chmod {} {}", kind == KeyFileKind::Private ? "600" : "644", shellWord(path)));
  }
  if (faults.empty()) return std::nullopt;
  std::string text = fmt::format("refusing {} {}: ", fileNoun(kind), path);
  for (size_t i = 0; i < faults.size(); ++i) text += (i ? "; " : "") + faults[i];
  text += "; fix it with: ";
  for (size_t i = 0; i < fixes.size(); ++i) text += (i ? " && " : "") + fixes[i];
  return text;
}

std::optional<std::string> readKeyFile(const std::string& path, KeyFileKind kind) {
  // O_NONBLOCK: a FIFO put there must not hang the open; it is refused below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    if (err == ELOOP) {
      // Only to word the refusal: nothing is read from this path.
      if (auto st = lstatPath(path); st && S_ISLNK(st->st_mode))
        throw InputError(
            "refusing {} {}: it is a symbolic link, and key files are never read through links; "
            "replace the link with the key file itself",
            fileNoun(kind), path);
    }
    throw SysError(err, fmt::format("cannot open {}", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", path));
  if (auto fault = keyFileFault(st, path, kind, ::geteuid())) throw InputError(*fault);
  std::string out;
  readChunks(fd.get(), path, [&](std::string_view chunk) { out.append(chunk); });
  return out;
}

}  // namespace mesh::trust
