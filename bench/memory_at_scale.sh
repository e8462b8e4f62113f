#!/usr/bin/env bash
# How each cost grows with N, whole `mesh-host apply` processes (wall, CPU = user +
# system, peak RSS; through mesh_bench_measure): for N = 1,000, 10,000, 100,000 (or the N given)
#   archive first  — one `archive` resource of N files (tar, ~100 bytes each, in
#                    100 directories) unpacked into an empty target;
#   archive no-op  — the same, nothing to do (fingerprints settled);
#   files first    — N `file` resources into an empty target (a fresh target and
#                    store each run);
#   files no-op    — the same, nothing to do.
# Runs of the scenarios of one N interleave (archive no-op, files no-op, …);
# medians of MESH_BENCH_RUNS (default 3). Installs nothing.
#   bench/memory_at_scale.sh [BUILD_DIR] [N…]     (default: build, 1000 10000 100000)
#   env: MESH_BENCH_RUNS (3), MESH_BENCH_DIR (/var/tmp), MESH_BENCH_BIN (another
#        mesh-host binary, e.g. a baseline), MESH_BENCH_MEASURE
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
sizes=("${@:-1000 10000 100000}")
# shellcheck disable=SC2206
[ $# -eq 0 ] && sizes=(1000 10000 100000)
bin=${MESH_BENCH_BIN:-$PWD/$build/bin/mesh-host}
measure=${MESH_BENCH_MEASURE:-$PWD/$build/bench/mesh_bench_measure}
runs=${MESH_BENCH_RUNS:-3}
for x in "$bin" "$measure"; do
  [ -x "$x" ] || { echo "no $x: scripts/build mesh-host mesh_bench_measure" >&2; exit 1; }
done

work=$(mktemp -d "${MESH_BENCH_DIR:-/var/tmp}/mesh-bench-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# run NAME CMD…: measured; appends "wall_ms cpu_ms rss_mib" to $work/NAME; fails loudly.
run() {
  local name=$1
  shift
  "$measure" "$work/fig" "$@" >"$work/out" 2>&1 || { tail -5 "$work/out" >&2; exit 1; }
  awk '{printf "%.1f %.1f %.1f\n", $1 / 1000, $2 / 1000, $3 / 1024}' "$work/fig" >>"$work/$name"
}
expect() {  # PATTERN: the last apply's summary
  grep -q "$1" "$work/out" || { echo "expected '$1':" >&2; tail -3 "$work/out" >&2; exit 1; }
}

echo "mesh-host: $("$bin" --version) ($bin)"
echo "machine:   $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1 /proc/loadavg)"
echo "disk:      $(df -T "$work" | awk 'NR==2 {print $2, $1}') ($work)"
echo "method:    whole processes, medians of $runs interleaved runs"
echo
printf '| %7s | %-13s | %9s | %9s | %12s |\n' N scenario "wall ms" "CPU ms" "peak RSS MiB"
printf '|--------:|---------------|----------:|----------:|-------------:|\n'
for n in "${sizes[@]}"; do
  dir=$work/n$n
  mkdir -p "$dir/src" "$dir/blobs/sha256"
  # The tree, the archive and its blob; the declarations.
  awk -v n="$n" -v src="$dir/src" -v decl="$dir/files.toml" 'BEGIN {
    for (d = 0; d < 100 && d < n; d++) system(sprintf("mkdir -p %s/d%03d", src, d))
    for (i = 0; i < n; i++) {
      p = sprintf("d%03d/f%06d", i % 100, i); s = sprintf("file %06d ", i)
      while (length(s) < 99) s = s "x"
      print s > (src "/" p); close(src "/" p)
      printf "[module.bench.file.f%06d]\npath = \"/srv/files/%s\"\ncontent = \"%s\\n\"\n\n", i, p, s > decl
    }
  }'
  tar -C "$dir/src" -cf "$dir/bundle.tar" .
  hex=$(sha256sum "$dir/bundle.tar" | cut -d' ' -f1)
  mv "$dir/bundle.tar" "$dir/blobs/sha256/$hex"
  rm -rf "$dir/src"
  printf '[module.bench.archive.tree]\npath = "/srv/tree"\nbundle = "sha256:%s"\nmax-entries = %d\n' \
    "$hex" $((n + 200)) >"$dir/archive.toml"
  common=(--node bench --blobs "$dir/blobs")
  for r in $(seq "$runs"); do
    mkdir -p "$dir/a$r" "$dir/f$r"
    run "archive-first-$n" "$bin" apply "$dir/archive.toml" --root "$dir/a$r" "${common[@]}"
    expect "1 created"
    run "files-first-$n" "$bin" apply "$dir/files.toml" --root "$dir/f$r" "${common[@]}"
    expect "$n created"
  done
  sleep 1.1  # past the racy window: fingerprints are trusted from the next apply on
  "$bin" apply "$dir/archive.toml" --root "$dir/a1" "${common[@]}" >/dev/null
  "$bin" apply "$dir/files.toml" --root "$dir/f1" "${common[@]}" >/dev/null
  for r in $(seq "$runs"); do
    run "archive-noop-$n" "$bin" apply "$dir/archive.toml" --root "$dir/a1" "${common[@]}"
    expect "1 unchanged"
    run "files-noop-$n" "$bin" apply "$dir/files.toml" --root "$dir/f1" "${common[@]}"
    expect "$n unchanged"
  done
  for s in archive-first archive-noop files-first files-noop; do
    w=$(cut -d' ' -f1 "$work/$s-$n" | median)
    c=$(cut -d' ' -f2 "$work/$s-$n" | median)
    m=$(cut -d' ' -f3 "$work/$s-$n" | median)
    printf '| %7s | %-13s | %9.0f | %9.0f | %12.1f |\n' "$n" "${s/-/ }" "$w" "$c" "$m"
  done
  rm -rf "$dir"
done
