#!/usr/bin/env bash
# Builds mesh-host and bench/fleet_scale (RelWithDebInfo, in ./build unless MESH_BENCH_BUILD
# says otherwise) and runs it once per fleet size: simulated nodes in one process plus real
# `mesh-host run --etcd` agents, against one etcd started for the run (Debian's etcd-server;
# tests/etcd/etcd.sh). Prints, per size, push-to-all-applied p50/p99, `fleet status` time,
# etcd growth per push and writes/s at idle (see the header of bench/fleet_scale.cc).
#   bench/fleet_scale.sh [mesh_bench_fleet_scale options: --agents 100 --rounds 3 --idle 30 …]
#   MESH_BENCH_SIZES="1000 10000" (the default)   MESH_BENCH_JOBS=2 (build jobs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MESH_BENCH_BUILD:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESH_WERROR="${MESH_WERROR:-ON}" >/dev/null
cmake --build "$build" -j"${MESH_BENCH_JOBS:-2}" --target mesh-host mesh_bench_fleet_scale >/dev/null
for n in ${MESH_BENCH_SIZES:-1000 10000}; do
  "$build/bench/mesh_bench_fleet_scale" --nodes "$n" "$@"
done
