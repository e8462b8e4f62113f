// What one cycle did to one resource. An Outcome cannot be built without the
// digest the machine now holds: every factory takes it, on every path —
// `unchanged` included — so a caller cannot forget it (the bug this project was
// born from: an unchanged outcome without its digest made the next cycle
// re-create the resource).
#pragma once

#include <string>

#include "util/digest.hh"
#include "util/tally.hh"

namespace mesh::apply {

// The outcomes (util/tally.hh says what each means).
enum class Verdict { Unchanged, Created, Updated, Removed, Released, Skipped, Failed };

const char* verdictName(Verdict v);  // "unchanged", "created", …
// Adds one outcome of verdict v to t.
void count(Tally& t, Verdict v);

class Outcome {
 public:
  static Outcome unchanged(Digest held, std::string reason = {}) {
    return Outcome(Verdict::Unchanged, std::move(held), std::move(reason));
  }
  static Outcome created(Digest held, std::string reason, std::string detail) {
    return Outcome(Verdict::Created, std::move(held), std::move(reason), std::move(detail));
  }
  static Outcome updated(Digest held, std::string reason, std::string detail) {
    return Outcome(Verdict::Updated, std::move(held), std::move(reason), std::move(detail));
  }
  // Nothing is held after a removal; say so explicitly.
  static Outcome removed(std::string reason, std::string detail = {}) {
    return Outcome(Verdict::Removed, Digest::none(), std::move(reason), std::move(detail));
  }
  // No longer declared and left in place: only the record goes, nothing is held
  // for mesh-host any more.
  static Outcome released(std::string reason, std::string detail) {
    return Outcome(Verdict::Released, Digest::none(), std::move(reason), std::move(detail));
  }
  // Not tried because a resource it requires did not converge; `held`: what the
  // machine still holds (left in place).
  static Outcome skipped(Digest held, std::string reason) {
    return Outcome(Verdict::Skipped, std::move(held), std::move(reason));
  }
  // `held`: what the machine still holds (the failure left it in place).
  static Outcome failed(Digest held, std::string error) {
    return Outcome(Verdict::Failed, std::move(held), std::move(error));
  }

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

  Verdict verdict() const { return verdict_; }
  const Digest& held() const { return held_; }
  const std::string& reason() const { return reason_; }
  const std::string& detail() const { return detail_; }
  bool changed() const { return verdict_ == Verdict::Created || verdict_ == Verdict::Updated; }
  // Failed or skipped: the resource is not as declared, what was there stays.
  bool notConverged() const { return verdict_ == Verdict::Failed || verdict_ == Verdict::Skipped; }
  // Removed or released: the record goes.
  bool gone() const { return verdict_ == Verdict::Removed || verdict_ == Verdict::Released; }

  // Kind-specific fast-path data to remember (stat fingerprints, a manifest).
  std::string observed;
  // Plan: a unified diff or "(secret changed)"; empty otherwise.
  std::string diff;
  // Warnings that do not fail the resource (shown in plan and apply).
  std::string warning;
  // False for a change of form only, not of what is declared (a unit file rendered anew
  // by an upgraded mesh-host): the processes that restart on this resource owe nothing.
  bool restartsDependents = true;
  // A resource whose path changed: where it was ("would move /a -> /b").
  std::string movedFrom, movedTo;

  // Processes: what the cycle must still do once every resource has been
  // converged (starts, restarts and reloads run last, after one daemon-reload at most).
  enum class Activation { None, Start, Restart, Reload };
  Activation activation = Activation::None;
  std::string service;     // the service to activate
  bool restarted = false;  // a restart was done (JSON "restarted")

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

}  // namespace mesh::apply
