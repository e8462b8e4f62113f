#include "apply/applier.hh"

#include <array>

#include "decl/kind_info.hh"
#include "util/error.hh"

namespace mesh::apply {

const Applier& fileApplier();
const Applier& directoryApplier();
const Applier& linkApplier();
const Applier& archiveApplier();
const Applier& credentialApplier();
const Applier& processApplier();
const Applier& serviceApplier();
const Applier& absentApplier();
const Applier& userApplier();
const Applier& groupApplier();

namespace {

struct ApplierRow {
  decl::Kind kind;
  const Applier& (*applier)();
};

// One row per kind, in Kind order (decl/kind_info.hh).
constexpr std::array<ApplierRow, decl::kKindCount> kAppliers = {{
    {decl::Kind::File, fileApplier},
    {decl::Kind::Directory, directoryApplier},
    {decl::Kind::Link, linkApplier},
    {decl::Kind::Archive, archiveApplier},
    {decl::Kind::Credential, credentialApplier},
    {decl::Kind::Process, processApplier},
    {decl::Kind::Service, serviceApplier},
    {decl::Kind::Absent, absentApplier},
    {decl::Kind::User, userApplier},
    {decl::Kind::Group, groupApplier},
}};

static_assert([] {
  for (size_t i = 0; i < kAppliers.size(); ++i)
    if (static_cast<size_t>(kAppliers[i].kind) != i) return false;
  return true;
}());

}  // namespace

const Applier& applierFor(decl::Kind kind) {
  const auto i = static_cast<size_t>(kind);
  if (i >= kAppliers.size()) throw Error("unknown resource kind");
  return kAppliers[i].applier();
}

const Applier& applierFor(const std::string& kindName) {
  auto k = decl::kindFromName(kindName);
  if (!k) throw Error("the state store names an unknown kind '{}'", kindName);
  return applierFor(*k);
}

}  // namespace mesh::apply
