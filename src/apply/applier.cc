#include "apply/applier.hh"

#include "util/error.hh"

namespace mesh::apply {

const Applier& fileApplier();
const Applier& directoryApplier();
const Applier& linkApplier();
const Applier& archiveApplier();
const Applier& credentialApplier();
const Applier& processApplier();

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::Unchanged:
      return "unchanged";
    case Verdict::Created:
      return "created";
    case Verdict::Updated:
      return "updated";
    case Verdict::Removed:
      return "removed";
    case Verdict::Released:
      return "released";
    case Verdict::Skipped:
      return "skipped";
    case Verdict::Failed:
      return "failed";
  }
  return "?";
}

void count(Tally& t, Verdict v) {
  switch (v) {
    case Verdict::Unchanged:
      ++t.unchanged;
      break;
    case Verdict::Created:
      ++t.created;
      break;
    case Verdict::Updated:
      ++t.updated;
      break;
    case Verdict::Removed:
      ++t.removed;
      break;
    case Verdict::Released:
      ++t.released;
      break;
    case Verdict::Skipped:
      ++t.skipped;
      break;
    case Verdict::Failed:
      ++t.failed;
      break;
  }
}

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

std::string reasonToAct(const state::Record* rec, const Digest& want, bool somethingThere,
                        const std::string& driftWhat) {
  if (!rec) return somethingThere ? reasons::kAdopted : reasons::kNew;
  if (rec->wrote != want.str()) return reasons::kDeclared;
  return "drift: " + driftWhat;
}

std::string reasonUnchanged(const state::Record* rec) {
  return rec ? "" : reasons::kAdopted;
}

}  // namespace mesh::apply
