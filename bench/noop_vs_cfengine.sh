#!/usr/bin/env bash
# A one-shot no-op apply of N files (default 5,000, 10,000, 50,000), whole process:
# mesh-host against CFEngine's cf-agent on the same files and against the fstatat
# floor; wall, CPU and peak RSS, medians of 5 alternating runs, and the ratios; then
# the idle agent's RSS. Builds what it needs into ./build (RelWithDebInfo); installs
# nothing: without cf-agent (apt-get install cfengine3) it measures the rest.
#   bench/noop_vs_cfengine.sh [mesh_bench_noop options: --runs 5 --dir TMPDIR --keep --no-idle N…]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MESH_BENCH_BUILD:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DMESH_WERROR="${MESH_WERROR:-ON}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j"$(( $(nproc) < 2 ? $(nproc) : 2 ))" --target mesh-host mesh_bench_noop >/dev/null
command -v cf-agent >/dev/null ||
  echo "cf-agent not found: install it with 'apt-get install cfengine3' to compare (measuring the rest)" >&2
exec "$build/bench/mesh_bench_noop" "$@"
