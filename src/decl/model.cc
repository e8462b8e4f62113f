#include "decl/model.hh"

#include <fmt/format.h>

namespace mesh::decl {

const std::string& Position::file() const {
  static const std::string none;
  return fileName ? *fileName : none;
}

std::string Position::str() const {
  if (line <= 0) return file();
  return fmt::format("{}:{}:{}", file(), line, column);
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
