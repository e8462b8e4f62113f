#include "apply/outcome.hh"

#include <iterator>

#include "state/store/records.hh"
#include "util/error.hh"

namespace mesh::apply {

namespace {

// What the record says mesh-host wrote: still held when a resource fails or is skipped.
Digest recordedHeld(const state::Record* rec) {
  if (!rec) return Digest::none();
  return Digest::parse(rec->wrote).value_or(Digest::none());
}

// One row per verdict, in the enum's order: its word, and its field in a Tally.
struct VerdictRow {
  Verdict verdict;
  const char* name;
  int64_t Tally::*field;
};
constexpr VerdictRow kVerdicts[] = {
    {Verdict::Unchanged, "unchanged", &Tally::unchanged},
    {Verdict::Created, "created", &Tally::created},
    {Verdict::Updated, "updated", &Tally::updated},
    {Verdict::Removed, "removed", &Tally::removed},
    {Verdict::Released, "released", &Tally::released},
    {Verdict::Skipped, "skipped", &Tally::skipped},
    {Verdict::Failed, "failed", &Tally::failed},
};
static_assert(std::size(kVerdicts) == static_cast<size_t>(Verdict::Failed) + 1);
static_assert([] {
  for (size_t i = 0; i < std::size(kVerdicts); ++i)
    if (static_cast<size_t>(kVerdicts[i].verdict) != i) return false;
  return true;
}());

const VerdictRow& rowOf(Verdict v) {
  return kVerdicts[static_cast<size_t>(v)];
}

}  // namespace

const char* verdictName(Verdict v) {
  return rowOf(v).name;
}

void count(Tally& t, Verdict v) {
  ++(t.*rowOf(v).field);
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
  return Outcome(r.verdict(), Digest::none(),
                 r.reason().empty() ? std::string(reasons::kNoLongerDeclared) : r.reason(),
                 r.detail());
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
