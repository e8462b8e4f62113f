// Memory left to the process's exit, on purpose. A command that runs once a process and
// holds a large model (a declaration of thousands of resources, a judged fleet of 10,000
// nodes) exits right after; freeing it one allocation at a time costs time the operator
// waits for, and the exit frees it all at once. This is the one way to say so: a bare
// `*new T` reads as a bug.
#pragma once

#include <utility>

namespace mesh {

// A T made from `args` that is never destroyed (its destructor does not run: give it
// nothing that must be flushed or closed). The reference is valid until the exit.
template <class T, class... Args>
T& leakAtExit(Args&&... args) {
  return *new T(std::forward<Args>(args)...);  // NOLINT: left to the exit (above)
}

}  // namespace mesh
