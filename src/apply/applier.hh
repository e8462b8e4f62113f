// The interface every resource kind implements, one file per kind under kinds/.
// Each follows the same steps: want → observe → decide → act (through the
// step's gate) → a decision, which the cycle turns into the outcome. What an
// applier is given is its arguments: the cycle-wide context, and the Step of
// the resource in hand (apply/step.hh).
#pragma once

#include "apply/context.hh"
#include "apply/outcome.hh"
#include "apply/step.hh"
#include "decl/model.hh"
#include "state/store/records.hh"

namespace mesh::apply {

class Applier {
 public:
  virtual ~Applier() = default;

  // The digest of what the declaration asks for. Pure but for what the kind must
  // read to know it (a credential's source file).
  virtual Digest want(Context& ctx, const decl::Resource& r) const = 0;

  // Converges one declared resource. `rec` is the record of the last cycle, if
  // any: a hint and a fast path, never the only evidence. Throws on failure; the
  // caller turns that into a `failed` outcome. The decision names no digest: the
  // cycle's outcome holds `want`.
  virtual Decision reconcile(Step& step, const decl::Resource& r, const Digest& want,
                             const state::Record* rec) const = 0;

  // Removes what `rec` says mesh-host wrote, for a resource no longer declared.
  // Leaves in place anything changed since it was written.
  virtual Removal remove(Step& step, const state::Record& rec) const = 0;

  // Whether the path still holds what `rec` says mesh-host wrote (nobody edited
  // it since): what was there before is put back only then (apply/originals.hh);
  // an edit since is left in place, as removal leaves it.
  virtual bool holdsWhatItWrote(Context& ctx, const state::Record& rec) const {
    (void)ctx;
    (void)rec;
    return true;
  }

  // The record says mesh-host installed something even though no cycle recorded
  // it as created (a process whose first start failed, or whose cycle was cut
  // short after Step::claimInstall): pruning removes it all the same.
  virtual bool ownsInstalled(const state::Record& rec) const {
    (void)rec;
    return false;
  }
};

// Thrown by a kind when the path holds an object of another type (a directory
// where a file is declared, …). The cycle may make room — remove that object
// when a record says mesh-host wrote it and nobody changed it since — and try
// once more; otherwise the resource fails with this message.
class InTheWay : public Error {
 public:
  using Error::Error;
};

const Applier& applierFor(decl::Kind kind);
const Applier& applierFor(const std::string& kindName);  // throws for an unknown kind

}  // namespace mesh::apply
