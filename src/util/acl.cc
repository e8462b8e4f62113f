#include "util/acl.hh"

#include <acl/libacl.h>
#include <sys/acl.h>

#include <cerrno>

#include "util/error.hh"

namespace mesh::acl {

namespace {

unsigned permsOf(acl_entry_t e) {
  acl_permset_t p;
  if (::acl_get_permset(e, &p) != 0) return 0;
  unsigned out = 0;
  if (::acl_get_perm(p, ACL_READ) == 1) out |= kRead;
  if (::acl_get_perm(p, ACL_WRITE) == 1) out |= kWrite;
  if (::acl_get_perm(p, ACL_EXECUTE) == 1) out |= kExec;
  return out;
}

// An acl_t freed at the end of its scope.
struct Owned {
  acl_t acl;
  ~Owned() {
    if (acl) ::acl_free(acl);
  }
};

void add(acl_t* acl, acl_tag_t tag, const void* qualifier, unsigned perms,
         const std::string& shown) {
  acl_entry_t e;
  acl_permset_t p;
  if (::acl_create_entry(acl, &e) != 0 || ::acl_set_tag_type(e, tag) != 0 ||
      (qualifier && ::acl_set_qualifier(e, qualifier) != 0) || ::acl_get_permset(e, &p) != 0 ||
      ::acl_clear_perms(p) != 0 || ((perms & kRead) && ::acl_add_perm(p, ACL_READ) != 0) ||
      ((perms & kWrite) && ::acl_add_perm(p, ACL_WRITE) != 0) ||
      ((perms & kExec) && ::acl_add_perm(p, ACL_EXECUTE) != 0))
    throwSys(fmt::format("cannot build the access list of {}", shown));
}

}  // namespace

Access Access::normalised() const {
  Access a = *this;
  a.hasMask = !users.empty() || !groups.empty();
  a.mask = 0;
  if (a.hasMask) {
    a.mask = group;
    for (const auto& [uid, p] : users) a.mask |= p;
    for (const auto& [gid, p] : groups) a.mask |= p;
  }
  return a;
}

bool Access::operator==(const Access& o) const {
  return owner == o.owner && group == o.group && other == o.other && users == o.users &&
         groups == o.groups && hasMask == o.hasMask && (!hasMask || mask == o.mask);
}

Access read(int fd, const std::string& shown) {
  Owned acl{::acl_get_fd(fd)};
  if (!acl.acl) throwSys(fmt::format("cannot read the access list of {}", shown));
  Access a;
  acl_entry_t e;
  for (int r = ::acl_get_entry(acl.acl, ACL_FIRST_ENTRY, &e); r == 1;
       r = ::acl_get_entry(acl.acl, ACL_NEXT_ENTRY, &e)) {
    acl_tag_t tag;
    if (::acl_get_tag_type(e, &tag) != 0) continue;
    const unsigned p = permsOf(e);
    switch (tag) {
      case ACL_USER_OBJ:
        a.owner = p;
        break;
      case ACL_GROUP_OBJ:
        a.group = p;
        break;
      case ACL_OTHER:
        a.other = p;
        break;
      case ACL_MASK:
        a.mask = p;
        a.hasMask = true;
        break;
      case ACL_USER:
      case ACL_GROUP: {
        void* q = ::acl_get_qualifier(e);
        if (!q) throwSys(fmt::format("cannot read the access list of {}", shown));
        if (tag == ACL_USER)
          a.users[*static_cast<uid_t*>(q)] = p;
        else
          a.groups[*static_cast<gid_t*>(q)] = p;
        ::acl_free(q);
        break;
      }
      default:
        break;
    }
  }
  return a;
}

void write(int fd, const Access& wanted, const std::string& shown) {
  const Access a = wanted.normalised();
  Owned acl{::acl_init(static_cast<int>(4 + a.users.size() + a.groups.size()))};
  if (!acl.acl) throwSys(fmt::format("cannot build the access list of {}", shown));
  add(&acl.acl, ACL_USER_OBJ, nullptr, a.owner, shown);
  add(&acl.acl, ACL_GROUP_OBJ, nullptr, a.group, shown);
  add(&acl.acl, ACL_OTHER, nullptr, a.other, shown);
  for (const auto& [uid, p] : a.users) add(&acl.acl, ACL_USER, &uid, p, shown);
  for (const auto& [gid, p] : a.groups) add(&acl.acl, ACL_GROUP, &gid, p, shown);
  if (a.hasMask) add(&acl.acl, ACL_MASK, nullptr, a.mask, shown);
  if (::acl_set_fd(fd, acl.acl) != 0) {
    if (errno == EOPNOTSUPP)
      throwSys(
          fmt::format("cannot give access to {}: its file system has no POSIX ACLs (mount "
                      "it with acl support, or keep User= services out of bundles)",
                      shown));
    throwSys(fmt::format("cannot set the access list of {}", shown));
  }
}

}  // namespace mesh::acl
