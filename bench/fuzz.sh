#!/usr/bin/env bash
# The longer fuzz run: every mesh-fuzz target (tests/fuzz) for SECONDS each (default
# 60), from its seed corpus, with a seed of its own per run (default 1; give another to
# explore elsewhere). Prints each target's executions, time and crashes; a crash leaves
# its input in OUT (default build/fuzz-out) as crash-<target>-<n> and fails the run.
#   bench/fuzz.sh [SECONDS] [SEED]     (MESH_BENCH_BUILD: the build tree, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seed=${2:-1}
build=${MESH_BENCH_BUILD:-build}
out=${OUT:-$build/fuzz-out}
[ -d "$build" ] || cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" --target mesh-fuzz >/dev/null
mkdir -p "$out"
failed=0
for target in decl compiled statement status enrollment heartbeat push-record body-manifest plan-file notify sealed; do
  if ! "$build/bin/mesh-fuzz" "$target" --corpus "tests/fuzz/corpus/$target" \
      --seconds "$seconds" --seed "$seed" --out "$out"; then
    echo "bench/fuzz.sh: $target FOUND A CRASH (input in $out)" >&2
    failed=1
  fi
done
exit "$failed"
