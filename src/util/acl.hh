// The POSIX access ACL of an open directory (libacl), read and written through
// its descriptor: never by path, so never through a link. mesh-host uses it to let
// a service's user traverse the state directory down to its own bundle, and read
// that bundle, and nothing else (apply/bundle_access.hh).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

namespace mesh::acl {

// rwx as 4/2/1, as in a mode's digits.
inline constexpr unsigned kRead = 4, kWrite = 2, kExec = 1;

struct Access {
  unsigned owner = 0, group = 0, other = 0;  // the owning user, owning group, others
  std::map<uid_t, unsigned> users;           // named users
  std::map<gid_t, unsigned> groups;          // named groups
  // The mask, present only with named entries; written as the union of the group
  // class (what `setfacl` computes), so a mask narrowed by hand reads as a difference.
  unsigned mask = 0;
  bool hasMask = false;

  // The access as it would be written: the mask recomputed.
  Access normalised() const;
  bool operator==(const Access& o) const;
  bool operator!=(const Access& o) const { return !(*this == o); }
};

// The directory open at `fd` (not O_PATH). `shown` names it in errors. A file
// system without ACLs reads as its mode.
Access read(int fd, const std::string& shown);

// Writes `a` (normalised) as the directory's access ACL; with no named entries,
// the ACL is its mode (the kernel drops the extended attribute).
void write(int fd, const Access& a, const std::string& shown);

}  // namespace mesh::acl
