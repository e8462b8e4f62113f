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

const std::string* Resource::service() const {
  if (const auto* p = std::get_if<ProcessSpec>(&spec)) return &p->service;
  if (const auto* s = std::get_if<ServiceSpec>(&spec)) return &s->unit;
  return nullptr;
}

const char* onRemoveName(OnRemove o) {
  switch (o) {
    case OnRemove::Restore:
      return "restore";
    case OnRemove::Keep:
      return "keep";
    case OnRemove::Delete:
      return "delete";
  }
  return "restore";
}

std::string_view Resource::module() const {
  return std::string_view(id).substr(0, id.find('.'));
}

std::string_view Resource::name() const {
  const size_t dot = id.find('.');
  return dot == std::string::npos ? std::string_view() : std::string_view(id).substr(dot + 1);
}

}  // namespace mesh::decl
