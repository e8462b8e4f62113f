#!/usr/bin/env bash
# Coverage-guided fuzzing of the tests/fuzz targets: libFuzzer (clang 14) with ASan and
# UBSan, the same target functions as mesh-fuzz (bench/fuzz.sh), in a tree of its own.
#   bench/fuzz-coverage.sh [SECONDS] [TARGET...]
# Installs clang 14 and its runtimes when missing, configures and builds BUILD (default
# build-fuzz; MESH_FUZZ_BUILD) with MESH_LIBFUZZER=ON, then runs each TARGET (default
# all) for SECONDS (default 60), at most 2 at once, seeded with tests/fuzz/corpus/<target>/
# and the target's built-in seeds and tokens (MESH_FUZZ_EXPORT, tests/fuzz/libfuzzer.cc).
# Prints per target: execs, exec/s, coverage (cov = edges, ft = features), the corpus
# it ends with, crashes. A finding (crash, leak, sanitizer report, timeout, OOM) is kept
# in BUILD/fuzz/<target>/artifacts/ with its log and fails the run; replay it with
# BUILD/bin/mesh-libfuzz-<target> FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(decl compiled statement status enrollment heartbeat push-record body-manifest plan-file notify sealed)
build=${MESH_FUZZ_BUILD:-build-fuzz}
jobs=2  # 2 cores, shared: never more fuzzers at once, nor compilers

scripts/install-deps
# Beyond what the build needs: clang 14, and libclang-rt-14-dev for libFuzzer's, ASan's
# and UBSan's runtimes (libclang_rt.fuzzer-x86_64.a: -fsanitize=fuzzer).
missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DMESH_LIBFUZZER=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "mesh-libfuzz-$t"); done
nice cmake --build "$build" -j"$jobs" "${build_targets[@]}" >/dev/null

# One target: a fresh working corpus (new inputs land there; the seed directories are
# only read), libFuzzer's seed 1, its final statistics in the log.
run_target() {
  local t=$1 dir="$build/fuzz/$1" bin="$build/bin/mesh-libfuzz-$1"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  MESH_FUZZ_EXPORT="$dir/seeds" "$bin"
  local seeds=("$dir/seeds")
  [ -d "tests/fuzz/corpus/$t" ] && seeds+=("tests/fuzz/corpus/$t")
  local rc=0
  nice "$bin" -seed=1 -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -dict="$dir/seeds.dict" -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" "${seeds[@]}" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

final_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }
failed=0
printf '%-14s %12s %8s %7s %8s %8s %8s\n' target execs exec/s cov ft corpus crashes
for t in "${targets[@]}"; do
  dir="$build/fuzz/$t"
  # The last status line: "#N DONE cov: C ft: F corp: U/SIZE ...".
  line=$(grep -E '^#[0-9]+.*cov: ' "$dir/log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$line")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$line")
  crashes=$(find "$dir/artifacts" -type f | wc -l)
  printf '%-14s %12s %8s %7s %8s %8s %8s\n' "$t" "$(final_stat number_of_executed_units "$dir/log")" \
    "$(final_stat average_exec_per_sec "$dir/log")" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes"
  if [ "$(cat "$dir/rc")" != 0 ] || [ "$crashes" -gt 0 ]; then
    echo "bench/fuzz-coverage.sh: $t FOUND SOMETHING (rc $(cat "$dir/rc"); $dir/log, $dir/artifacts/)" >&2
    failed=1
  fi
done
exit "$failed"
