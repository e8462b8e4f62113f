#include "apply/outcome.hh"

#include "state/store.hh"
#include "util/error.hh"

namespace mesh::apply {

namespace {

// What the record says mesh-host wrote: still held when a resource fails or is skipped.
Digest recordedHeld(const state::Record* rec) {
  if (!rec) return Digest::none();
  return Digest::parse(rec->wrote).value_or(Digest::none());
}

}  // namespace

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

Outcome Outcome::of(Decision d, const Digest& want, const state::Record* rec) {
  // Every kind's want is built by a WantBuilder: an empty one is a bug here.
  if (want.empty()) throw Error("internal error: an outcome without the digest it holds");
  std::string reason;
  if (d.verdict_ == Verdict::Unchanged)
    reason = reasonUnchanged(rec);
  else if (d.wordedByCycle_)
    reason = reasonToAct(rec, want, d.verdict_ == Verdict::Updated, d.words_);
  else
    reason = std::move(d.words_);
  if (!d.more_.empty()) reason += (reason.empty() ? "" : "; ") + d.more_;
  Outcome o(d.verdict_, want, std::move(reason), std::move(d.detail_));
  static_cast<Notes&>(o) = std::move(static_cast<Notes&>(d));
  return o;
}

Outcome Outcome::of(Removal r) {
  return Outcome(r.verdict(), Digest::none(), reasons::kNoLongerDeclared, r.detail());
}

Outcome Outcome::skipped(const state::Record* rec, std::string reason) {
  return Outcome(Verdict::Skipped, recordedHeld(rec), std::move(reason));
}

Outcome Outcome::failed(const state::Record* rec, std::string error) {
  return Outcome(Verdict::Failed, recordedHeld(rec), std::move(error));
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
