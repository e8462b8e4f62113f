// What one cycle did to one resource. A kind never names the digest the machine
// holds: it returns a Decision (or, for a resource no longer declared, a Removal),
// which has no digest field, and the cycle alone builds the Outcome, attaching the
// resource's want — or what the record says was written, on failure; nothing, on
// removal. The bug this project was born from (an unchanged outcome without its
// digest made the next cycle re-create the resource) cannot be written.
#pragma once

#include <string>
#include <string_view>

#include "util/digest.hh"
#include "util/tally.hh"

namespace mesh::state {
struct Record;
}

namespace mesh::apply {

// Shared reasons, so every kind words them alike.
namespace reasons {
inline constexpr const char* kNew = "new";
inline constexpr const char* kDeclared = "declared";
inline constexpr const char* kAdopted = "adopted";
inline constexpr const char* kNoLongerDeclared = "no longer declared";
inline constexpr const char* kRestored = "restored what was there before mesh-host";
inline constexpr const char* kWouldRestore = "would restore what was there before mesh-host";
inline constexpr const char* kAbsentRemoved = "declared absent";
}  // namespace reasons

// The outcomes (util/tally.hh says what each means).
enum class Verdict { Unchanged, Created, Updated, Removed, Released, Skipped, Failed };

const char* verdictName(Verdict v);  // "unchanged", "created", …
// Adds one outcome of verdict v to t.
void count(Tally& t, Verdict v);

// Processes: what the cycle must still do once every resource has been
// converged (starts, restarts and reloads run last, after one daemon-reload at most).
enum class Activation { None, Start, Restart, Reload };

// What a kind says beside its verdict; the outcome carries it on.
struct Notes {
  // Kind-specific fast-path data to remember (stat fingerprints, a manifest).
  std::string observed;
  // Instead of `observed`: the record the kind was given says it already, word
  // for word (a file's fast path; not copied, thousands of times a cycle).
  bool observedAsRecorded = false;
  // Plan: a unified diff or "(secret changed)"; empty otherwise.
  std::string diff;
  // Warnings that do not fail the resource (shown in plan and apply).
  std::string warning;
  // False for a change of form only, not of what is declared (a unit file rendered anew
  // by an upgraded mesh-host): the processes that restart on this resource owe nothing.
  bool restartsDependents = true;
  Activation activation = Activation::None;
  std::string service;  // the service to activate
};

// What a kind decided for a declared resource — no digest: the cycle attaches it.
class Decision : public Notes {
 public:
  // As declared already. The cycle words the reason: "adopted" with no record.
  static Decision unchanged() { return Decision(Verdict::Unchanged, true, {}, {}); }
  // Acting on `drift` (what differs): `created` when nothing was there, `updated`
  // otherwise. The cycle words the reason against the record: "new", "adopted",
  // "declared" or "drift: <drift>".
  static Decision act(bool somethingThere, std::string drift, std::string detail) {
    return Decision(somethingThere ? Verdict::Updated : Verdict::Created, true, std::move(drift),
                    std::move(detail));
  }
  // Updated for a reason of the kind's own, whatever the record says.
  static Decision updated(std::string reason, std::string detail) {
    return Decision(Verdict::Updated, false, std::move(reason), std::move(detail));
  }
  // `absent`: what was at its path removed (kept first, see apply/originals.hh).
  // The resource stays declared and its record stays: the next cycle finds
  // nothing there and is `unchanged`.
  static Decision removed(std::string detail) {
    return Decision(Verdict::Removed, false, reasons::kAbsentRemoved, std::move(detail));
  }
  // Said after the reason, "; "-separated ("restart-on a.key").
  void addReason(std::string more) { more_ = std::move(more); }

  Verdict verdict() const { return verdict_; }
  const std::string& detail() const { return detail_; }

 private:
  friend class Outcome;
  Decision(Verdict v, bool worded, std::string words, std::string detail)
      : verdict_(v), wordedByCycle_(worded), words_(std::move(words)), detail_(std::move(detail)) {}
  Verdict verdict_;
  bool wordedByCycle_;  // words_ is the drift the cycle words, not the reason itself
  std::string words_;
  std::string detail_;
  std::string more_;
};

// What a kind did with a resource no longer declared. Nothing is held after
// either: removed, or released (left in place; only the record goes).
class Removal {
 public:
  static Removal removed(std::string detail) {
    return Removal(Verdict::Removed, std::move(detail));
  }
  static Removal released(std::string detail) {
    return Removal(Verdict::Released, std::move(detail));
  }
  // What mesh-host first overwrote, put back (apply/originals.hh); a plan's
  // says it would.
  static Removal restored(bool planning, std::string detail) {
    Removal r(Verdict::Removed, std::move(detail));
    r.reason_ = planning ? reasons::kWouldRestore : reasons::kRestored;
    return r;
  }
  // The path holds what was there before mesh-host already: nothing is
  // written, and nothing restarts on it (cycle/pending.hh deletedNow).
  static Removal alreadyRestored(bool planning, const std::string& what) {
    return restored(planning, std::string(kAlreadyRestored) + what);
  }
  static constexpr std::string_view kAlreadyRestored = "already as it was before mesh-host: ";
  Verdict verdict() const { return verdict_; }
  const std::string& detail() const { return detail_; }
  // Empty: "no longer declared".
  const std::string& reason() const { return reason_; }

 private:
  Removal(Verdict v, std::string detail) : verdict_(v), detail_(std::move(detail)) {}
  Verdict verdict_;
  std::string detail_;
  std::string reason_;
};

class Outcome : public Notes {
 public:
  using Activation = apply::Activation;

  // The kind's decision for a declared resource: the machine holds (a plan: would
  // hold) `want`; the reason is worded against `rec`, the record the kind was given.
  static Outcome of(Decision d, const Digest& want, const state::Record* rec);
  // The kind's removal of a resource no longer declared: nothing is held.
  static Outcome of(Removal r);
  // Not tried because a resource it requires did not converge: the machine still
  // holds what `rec` says was written (left in place).
  static Outcome skipped(const state::Record* rec, std::string reason);
  // The failure left in place what `rec` says was written.
  static Outcome failed(const state::Record* rec, std::string error);

  // The same outcome told again after the cycle made room for it (an object of
  // another kind removed, an old path removed): `created`/`unchanged` become
  // `updated` — something was there, or changed — and the held digest stays.
  Outcome replacing(std::string reason, std::string detail) const {
    Outcome o = *this;
    if (o.verdict_ == Verdict::Created || o.verdict_ == Verdict::Unchanged)
      o.verdict_ = Verdict::Updated;
    o.reason_ = std::move(reason);
    o.detail_ = std::move(detail);
    return o;
  }
  // The same outcome with another reason: verdict, held digest and detail stay.
  Outcome retold(std::string reason) const {
    Outcome o = *this;
    o.reason_ = std::move(reason);
    return o;
  }

  Verdict verdict() const { return verdict_; }
  const Digest& held() const { return held_; }
  const std::string& reason() const { return reason_; }
  const std::string& detail() const { return detail_; }
  bool changed() const { return verdict_ == Verdict::Created || verdict_ == Verdict::Updated; }
  // Failed or skipped: the resource is not as declared, what was there stays.
  bool notConverged() const { return verdict_ == Verdict::Failed || verdict_ == Verdict::Skipped; }
  // Removed or released, holding nothing: the record goes. (An `absent` that
  // removed what was at its path holds its want: it stays declared.)
  bool gone() const {
    return (verdict_ == Verdict::Removed || verdict_ == Verdict::Released) && held_.empty();
  }

  // A resource whose path changed: where it was ("would move /a -> /b").
  std::string movedFrom, movedTo;
  bool restarted = false;  // a restart was done (JSON "restarted")
  // A failed start or restart that was made (the service did not stay up): it
  // pays the restarts owed all the same.
  bool activated = false;

 private:
  Outcome(Verdict v, Digest held, std::string reason, std::string detail = {})
      : verdict_(v),
        held_(std::move(held)),
        reason_(std::move(reason)),
        detail_(std::move(detail)) {}
  Verdict verdict_;
  Digest held_;
  std::string reason_;
  std::string detail_;
};

// The reason for acting on a resource whose machine state differs from `want`:
// "new", "adopted", "declared" or "drift: <what>".
std::string reasonToAct(const state::Record* rec, const Digest& want, bool somethingThere,
                        const std::string& driftWhat);

// The reason attached to an `unchanged` outcome: "adopted" when there was no
// record, "" otherwise.
std::string reasonUnchanged(const state::Record* rec);

}  // namespace mesh::apply
