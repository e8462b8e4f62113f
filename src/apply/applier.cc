#include "apply/applier.hh"

#include "util/error.hh"

namespace mesh::apply {

const Applier& fileApplier();
const Applier& directoryApplier();
const Applier& linkApplier();
const Applier& archiveApplier();
const Applier& credentialApplier();
const Applier& processApplier();

const Applier& applierFor(decl::Kind kind) {
  switch (kind) {
    case decl::Kind::File:
      return fileApplier();
    case decl::Kind::Directory:
      return directoryApplier();
    case decl::Kind::Link:
      return linkApplier();
    case decl::Kind::Archive:
      return archiveApplier();
    case decl::Kind::Credential:
      return credentialApplier();
    case decl::Kind::Process:
      return processApplier();
  }
  throw Error("unknown resource kind");
}

const Applier& applierFor(const std::string& kindName) {
  auto k = decl::kindFromName(kindName);
  if (!k) throw Error("the state store names an unknown kind '{}'", kindName);
  return applierFor(*k);
}

}  // namespace mesh::apply
