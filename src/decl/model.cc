#include "decl/model.hh"

#include <fmt/format.h>

namespace mesh::decl {

const char* kindName(Kind k) {
  switch (k) {
    case Kind::File:
      return "file";
    case Kind::Directory:
      return "directory";
    case Kind::Link:
      return "link";
    case Kind::Archive:
      return "archive";
    case Kind::Credential:
      return "credential";
    case Kind::Process:
      return "process";
  }
  return "?";
}

std::optional<Kind> kindFromName(std::string_view name) {
  for (Kind k :
       {Kind::File, Kind::Directory, Kind::Link, Kind::Archive, Kind::Credential, Kind::Process})
    if (name == kindName(k)) return k;
  return std::nullopt;
}

std::string Position::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

const std::string& Resource::path() const {
  static const std::string none;
  return std::visit(
      [](const auto& s) -> const std::string& {
        if constexpr (requires { s.path; })
          return s.path;
        else
          return none;
      },
      spec);
}

}  // namespace mesh::decl
