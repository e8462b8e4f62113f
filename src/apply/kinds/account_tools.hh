// What the `user` and `group` kinds share: the distribution's own tools
// (useradd, usermod, userdel, groupadd, groupmod, groupdel from Debian's
// passwd package), run with `--root <root>` when the cycle's root is not "/",
// and what a record remembers of an account.
//
// Why these tools and not systemd-sysusers: they take the lock every tool of
// the shadow suite takes (/etc/.pwd.lock, lckpwdf) and write passwd, shadow,
// group and gshadow together, so they never race vipw, adduser or a package's
// postinst; they modify and delete (sysusers only ever adds, so drift could not
// be repaired nor an account removed); and --root chroots into a node image.
// Idempotence is mesh-host's: a tool runs only when the files differ from the
// declaration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apply/context.hh"
#include "apply/outcome.hh"
#include "apply/step.hh"
#include "state/store/records.hh"

namespace mesh::apply {

// Runs `tool` (a name under /usr/sbin) with `args`, with --root first when the
// root is not "/"; throws Error("useradd failed (exit 9): <its stderr>").
void runAccountTool(Context& ctx, const std::string& tool, std::vector<std::string> args);

// How many account tools this process ran: a no-op cycle runs none.
uint64_t accountToolRuns();

// An account as a record remembers it: its name, and whether mesh-host made it
// (only then does undeclaring it delete it).
struct AccountObserved {
  std::string name;
  bool created = false;
  std::string str() const;
  static AccountObserved parse(const std::string& text);  // empty on malformed
};

// Undeclaring an account (`what`: "user" or "group"): deleted with `tool`
// (userdel, groupdel; never -r) only when mesh-host made it and it is still
// there (`exists`); `filesLeft` says what stays ("its home and files").
Removal removeAccount(Step& step, const state::Record& rec, const char* what, const char* tool,
                      bool exists, const char* filesLeft);

}  // namespace mesh::apply
