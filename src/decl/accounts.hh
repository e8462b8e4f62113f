// Internal to the declaration parser: the `user` and `group` kinds' readers, and
// the check of every user and group a resource names (owner, group, a user's
// groups, a process's User=/Group=). A name declared as an account in the same
// declaration is resolved when the cycle applies it, after that account: the
// resource naming it is ordered after it (an implied `requires`). Any other name
// must exist on the node, or the declaration is refused where it is written.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "decl/draft.hh"
#include "decl/parse.hh"

namespace mesh::decl {

class Fields;

UserSpec readUser(Fields& f, Draft& d, const ParseOptions& options);
GroupSpec readGroup(Fields& f, Draft& d, const ParseOptions& options);

// Checks every AccountRef of `drafts` (textual order) and adds the implied
// requires; reports two resources declaring one account.
void checkAccounts(Drafts& drafts, Diagnostics& diags, const ParseOptions& options);

// The names a declaration declares as accounts: users, and groups — those of
// `group` resources and those a user without a `group` brings (its own).
struct DeclaredAccounts {
  std::set<std::string> users, groups;
};
DeclaredAccounts declaredAccounts(const std::vector<Resource>& resources);

}  // namespace mesh::decl
