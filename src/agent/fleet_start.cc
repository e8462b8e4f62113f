#include "agent/fleet_start.hh"

#include "state/store.hh"
#include "util/fs.hh"

namespace mesh::agent {

fleet::NodeStatus statusFromStore(const std::string& stateDir, const AcceptedDeclaration* cached) {
  fleet::NodeStatus st;
  st.trigger = "before this agent's first cycle";
  try {
    auto store = state::Store::openIfExists(stateDir);
    if (!store) return st;
    const auto last = store->lastFinishedCycle();
    if (!last) return st;
    st.generation = last->generation;
    st.cycle = last->cycle;
    st.lastCycleAtMs = last->finishedAt;
    st.cycleMs = last->ms;
    st.created = last->tally.created;
    st.updated = last->tally.updated;
    st.unchanged = last->tally.unchanged;
    st.removed = last->tally.removed;
    st.released = last->tally.released;
    st.skipped = last->tally.skipped;
    st.failed = last->tally.failed;
    if (!cached) return st;
    for (const auto& g : store->generations())
      if (g.generation == last->generation && g.digest == cached->declaration.digest.str()) {
        st.serial = cached->declaration.serial;
        st.declarationDigest = g.digest;
        st.revision = cached->revision;
      }
  } catch (const std::exception&) {
    // Nothing to say yet: the first cycle publishes what it finds.
  }
  return st;
}

}  // namespace mesh::agent
