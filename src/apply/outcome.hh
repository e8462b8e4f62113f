// What one cycle did to one resource. An Outcome cannot be built without the
// digest the machine now holds: every factory takes it, on every path —
// `unchanged` included — so a caller cannot forget it (the bug this project was
// born from: an unchanged outcome without its digest made the next cycle
// re-create the resource).
#pragma once

#include <string>

#include "util/digest.hh"

namespace mesh::apply {

enum class Verdict { Unchanged, Created, Updated, Removed, Failed };

const char* verdictName(Verdict v);  // "unchanged", "created", …

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

  // Kind-specific fast-path data to remember (stat fingerprints, a manifest).
  std::string observed;
  // Plan: a unified diff or "(secret changed)"; empty otherwise.
  std::string diff;
  // Warnings that do not fail the resource (shown in plan and apply).
  std::string warning;
  // A resource whose path changed: where it was ("would move /a -> /b").
  std::string movedFrom, movedTo;

  // Processes: what the cycle must still do once every resource has been
  // converged (starts and restarts run last, after one daemon-reload at most).
  enum class Activation { None, Start, Restart };
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
