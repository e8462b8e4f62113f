// Who may read which bundle: a process whose unit says `User=` (not root) runs
// as that user from <state-dir>/bundles/<hex>, under a state directory only root
// and its group may enter (0750). Each such user is given exactly its bundle:
//
//   <state-dir>               a named ACL entry `user:U:--x` (traverse only)
//   <state-dir>/bundles       0711: traversed, never listed
//   <state-dir>/bundles/<hex> 0700 + `user:U:r-x` for each user of that bundle
//
// and nothing else: state.db, node.key, blobs/, the logs and every other bundle stay
// out of its reach (their own modes give others nothing; a bundle root is 0700).
// The access is the union of the users of the current declaration's processes;
// a user no longer among them is revoked. Observed first: when everything is as
// wanted nothing is written, and access upkeep never restarts a service.
#pragma once

#include <string>
#include <vector>

#include "apply/context.hh"
#include "decl/model.hh"

namespace mesh::apply {

// Brings the access in line with `d`'s processes (planning: only says what it
// would change). Returns one line per change made, for the report. Run after the
// cycle's resources (the `user` resources made the users) and before its starts.
// Throws Error when an ACL cannot be read or written.
std::vector<std::string> keepBundleAccess(Context& ctx, const decl::Declaration& d);

// The non-root uid a process runs as by its `User=`, or nullopt (none, root,
// mesh-host's own user, or a user that does not exist yet).
std::optional<uid_t> serviceUid(const decl::ProcessSpec& s);

}  // namespace mesh::apply
