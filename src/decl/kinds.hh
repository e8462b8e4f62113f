// Internal to the declaration parser: reads one resource table into a Draft,
// one reader per kind. Cross-resource checks (ids, paths, services, order)
// come later, in validate.hh and order.hh.
#pragma once

#include <toml++/toml.h>

#include "decl/draft.hh"
#include "decl/parse.hh"

namespace mesh::decl {

struct ResourceHeader {
  std::string module;
  std::string name;
  Kind kind;
  Position pos;  // of the resource's table
};

Draft readResource(const ResourceHeader& header, const toml::table& table, Diagnostics& diags,
                   const ParseOptions& options);

}  // namespace mesh::decl
