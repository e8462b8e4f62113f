#include "decl/want.hh"

#include <array>
#include <string_view>
#include <variant>

namespace mesh::decl {

namespace {

// "0644": four octal digits, as fmt's {:04o} of m & 07777.
std::array<char, 4> modeDigits(mode_t m) {
  m &= 07777;
  return {static_cast<char>('0' + ((m >> 9) & 7)), static_cast<char>('0' + ((m >> 6) & 7)),
          static_cast<char>('0' + ((m >> 3) & 7)), static_cast<char>('0' + (m & 7))};
}

Digest wantOfSpec(const FileSpec& s) {
  WantBuilder w("file/1");
  w.add("content", s.contentDigest);
  addAttributeFields(w, s.mode, s.owner, s.group);
  return w.finish();
}

Digest wantOfSpec(const DirectorySpec& s) {
  WantBuilder w("directory/1");
  addAttributeFields(w, s.mode, s.owner, s.group);
  return w.finish();
}

Digest wantOfSpec(const LinkSpec& s) {
  return WantBuilder("link/1").add("target", s.target).finish();
}

Digest wantOfSpec(const ArchiveSpec& s) {
  WantBuilder w("archive/1");
  w.add("bundle", s.bundle).add("path", s.path);
  // Only when set: every want made before keep-modes existed stays as it was.
  if (s.keepModes) w.add("keep-modes", "true");
  return w.finish();
}

Digest wantOfSpec(const AbsentSpec& s) {
  WantBuilder w("absent/1");
  w.add("path", s.path);
  if (s.recursive) w.add("recursive", "true");
  return w.finish();
}

}  // namespace

bool wantIsOfSpec(Kind kind) {
  switch (kind) {
    case Kind::File:
    case Kind::Directory:
    case Kind::Link:
    case Kind::Archive:
    case Kind::Absent:
      return true;
    case Kind::Credential:
    case Kind::Process:
    case Kind::Service:
    case Kind::User:
    case Kind::Group:
      return false;
  }
  return false;
}

Digest specWant(const Resource& r) {
  return std::visit(
      [](const auto& s) -> Digest {
        if constexpr (requires { wantOfSpec(s); })
          return wantOfSpec(s);
        else
          return Digest::none();
      },
      r.spec);
}

void addAttributeFields(WantBuilder& w, mode_t mode, const std::optional<Principal>& owner,
                        const std::optional<Principal>& group) {
  const auto digits = modeDigits(mode);
  w.add("mode", std::string_view(digits.data(), digits.size()));
  w.add("owner", owner ? std::string_view(owner->name) : std::string_view());
  w.add("group", group ? std::string_view(group->name) : std::string_view());
}

}  // namespace mesh::decl
