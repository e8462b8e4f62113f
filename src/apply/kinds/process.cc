// `process`: a long-running service. Comes with the supervisor backends.
#include "apply/applier.hh"
#include "util/error.hh"

namespace mesh::apply {

namespace {

class ProcessApplier : public Applier {
 public:
  Digest want(Context&, const decl::Resource&) const override {
    throw Error("the process kind is not supported by this build yet");
  }
  Outcome reconcile(Context&, const decl::Resource&, const Digest&,
                    const state::Record*) const override {
    throw Error("the process kind is not supported by this build yet");
  }
  Outcome remove(Context&, const state::Record&) const override {
    throw Error("the process kind is not supported by this build yet");
  }
};

}  // namespace

const Applier& processApplier() {
  static const ProcessApplier a;
  return a;
}

}  // namespace mesh::apply
