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

namespace {

bool isNumeric(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

uid_t lookupUser(const std::string& name) {
  if (isNumeric(name)) return static_cast<uid_t>(std::strtoul(name.c_str(), nullptr, 10));
  struct passwd pw {};
  struct passwd* out = nullptr;
  std::vector<char> buf(16384);
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &out) != 0 || !out)
    throw Error("no user '{}' on this node", name);
  return out->pw_uid;
}

gid_t lookupGroup(const std::string& name) {
  if (isNumeric(name)) return static_cast<gid_t>(std::strtoul(name.c_str(), nullptr, 10));
  struct group gr {};
  struct group* out = nullptr;
  std::vector<char> buf(16384);
  if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &out) != 0 || !out)
    throw Error("no group '{}' on this node", name);
  return out->gr_gid;
}

}  // namespace

Ownership resolveOwnership(const Attributes& a) {
  Ownership o;
  if (a.owner) o.uid = lookupUser(a.owner->name);
  if (a.group) o.gid = lookupGroup(a.group->name);
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
