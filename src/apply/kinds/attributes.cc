#include "apply/kinds/attributes.hh"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <vector>

#include "decl/want.hh"
#include "util/error.hh"

namespace mesh::apply {

Ownership resolveOwnership(Context& ctx, const Attributes& a) {
  Ownership o;
  const Accounts& accounts = ctx.accounts();
  if (a.owner) {
    auto uid = accounts.uid(a.owner->name);
    if (!uid && ctx.planning() && ctx.accountPlanned(false, a.owner->name)) uid = uid_t(-1);
    if (!uid) throw Error("no user '{}' on this node", a.owner->name);
    o.uid = *uid;
  }
  if (a.group) {
    auto gid = accounts.gid(a.group->name);
    if (!gid && ctx.planning() && ctx.accountPlanned(true, a.group->name)) gid = gid_t(-1);
    if (!gid) throw Error("no group '{}' on this node", a.group->name);
    o.gid = *gid;
  }
  return o;
}

namespace {

// "0644": four octal digits, as fmt's {:04o} of m & 07777.
std::array<char, 4> modeDigits(mode_t m) {
  m &= 07777;
  return {static_cast<char>('0' + ((m >> 9) & 7)), static_cast<char>('0' + ((m >> 6) & 7)),
          static_cast<char>('0' + ((m >> 3) & 7)), static_cast<char>('0' + (m & 7))};
}

}  // namespace

void addAttributes(WantBuilder& w, const Attributes& a) {
  decl::addAttributeFields(w, a.mode, a.owner, a.group);
}

std::string modeString(mode_t m) {
  const auto mode = modeDigits(m);
  return std::string(mode.data(), mode.size());
}

std::optional<std::string> attributeDrift(const struct stat& st, const Attributes& a,
                                          const Ownership& ids) {
  if ((st.st_mode & 07777) != (a.mode & 07777))
    return fmt::format("mode {}, want {}", modeString(st.st_mode), modeString(a.mode));
  if (a.owner && st.st_uid != ids.uid)
    return fmt::format("owner {}, want {} ({})", st.st_uid, a.owner->name, ids.uid);
  if (a.group && st.st_gid != ids.gid)
    return fmt::format("group {}, want {} ({})", st.st_gid, a.group->name, ids.gid);
  return std::nullopt;
}

void setAttributes(int fd, const Attributes& a, const Ownership& ids, const std::string& shown) {
  if (a.owner || a.group) {
    if (::fchown(fd, ids.uid, ids.gid) != 0)
      throwSys(fmt::format("cannot set the owner of {}", shown));
  }
  if (::fchmod(fd, a.mode & 07777) != 0) throwSys(fmt::format("cannot set the mode of {}", shown));
}

std::string ContentObserved::str() const {
  return (fingerprint ? fingerprint->str() : std::string()) + "|" + content;
}

ContentObserved ContentObserved::parse(const std::string& text) {
  ContentObserved o;
  auto bar = text.find('|');
  if (bar == std::string::npos) return o;
  o.fingerprint = Fingerprint::parse(std::string_view(text).substr(0, bar));
  o.content = text.substr(bar + 1);
  return o;
}

bool ContentObserved::holds(std::string_view text, const Fingerprint& now,
                            std::string_view content) {
  const auto bar = text.find('|');
  return bar != std::string_view::npos && text.substr(bar + 1) == content &&
         now.is(text.substr(0, bar));
}

ContentObserved ContentObserved::of(const struct stat& st, std::string content) {
  ContentObserved o;
  if (!fingerprintIsRacy(st)) o.fingerprint = Fingerprint::of(st);
  o.content = std::move(content);
  return o;
}

}  // namespace mesh::apply
