// Users and groups of the node at a root. Under the root "/" a name resolves
// through the C library (NSS), as every tool on the node resolves it. Under
// another root (a node image, a test's tree) that holds an etc/passwd, it
// resolves in <root>/etc/passwd and <root>/etc/group alone — the files
// useradd --root edits — never in the host's; a root without one resolves on
// the host, as mesh-host always did.
//
// The `user` and `group` kinds read the files themselves (readUser, …): a
// local account is what useradd made, whatever NSS adds from a directory.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mesh {

struct UserEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home, shell;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;  // supplementary members, as listed
};

// <root>/etc/passwd and <root>/etc/group, parsed (no NSS). Missing files read
// as empty; a line that does not parse is skipped.
std::optional<UserEntry> readUser(const std::string& root, std::string_view name);
std::vector<GroupEntry> readGroups(const std::string& root);
std::optional<GroupEntry> readGroup(const std::string& root, std::string_view name);
// Parsers of one line, for tests.
std::optional<UserEntry> parsePasswdLine(std::string_view line);
std::optional<GroupEntry> parseGroupLine(std::string_view line);

// How names resolve at a root (see above). A numeric name is its own id.
class Accounts {
 public:
  explicit Accounts(std::string root);
  std::optional<uid_t> uid(const std::string& name) const;
  std::optional<gid_t> gid(const std::string& name) const;
  bool inFiles() const { return files_; }  // resolves in <root>/etc, not through NSS

 private:
  std::string root_;
  bool files_;
};

}  // namespace mesh
