// The judgement (view/judge.hh) spread over the machine's cores: each node is judged on
// its own (a signature or two to check, a few JSON values to read), so a large fleet's
// nodes are judged on several threads, a small one's in order on the caller's. The
// result is the same either way.
#pragma once

#include <cstddef>
#include <functional>

namespace mesh::fleet {

// Runs each(i) once for every i in [0, n): on the calling thread alone below
// kParallelFrom, else on up to 8 threads that take kChunk indexes at a time. What one
// throws is thrown here, after every thread ended (the rest may not have run).
void forEachNode(size_t n, const std::function<void(size_t)>& each);

}  // namespace mesh::fleet
