#!/usr/bin/env bash
# 50 processes, with each supervisor backend: the first apply (installs and
# starts them all, from an empty root; then an empty declaration stops them),
# and no-op cycles over them: wall time of `mesh-host apply`, the cycle's own
# time, and how many start/restart/reload calls the no-op cycles made (must be
# zero). Medians over 5 runs.
#   bench/processes.sh [BUILD_DIR]   (default: build; run scripts/build first)
#   env: MESH_BENCH_PROCESSES (50), MESH_BENCH_BIN (another mesh-host, e.g. a baseline),
#        MESH_BENCH_USER (a User= for every service, e.g. nobody: their bundle access is kept)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=${MESH_BENCH_BIN:-$PWD/$build/bin/mesh-host}
n=${MESH_BENCH_PROCESSES:-50}
runs=5
[ -x "$bin" ] || { echo "no $bin: run scripts/build first" >&2; exit 1; }

work=$(mktemp -d /tmp/mesh-bench-proc.XXXXXX)
[ -n "${MESH_BENCH_USER:-}" ] && chmod 755 "$work"  # the services' user reaches their root
sdns=""
cleanup() {
  # An empty declaration stops every service the bench started.
  if [ -n "${empty:-}" ]; then
    for b in builtin systemd; do
      [ -d "$work/root-$b" ] && "$bin" apply "$empty" --root "$work/root-$b" --blobs "$work/blobs" \
        --node bench $(args "$b") >/dev/null 2>&1 || true
    done
  fi
  [ -n "$sdns" ] && bash tests/systemd/sdns.sh stop "$sdns" >/dev/null 2>&1 || true
  rm -rf "$work" "$sdns"
}
trap cleanup EXIT

mkdir -p "$work/src/bin" "$work/blobs/sha256"
printf '#!/bin/sh\nexec sleep 2147483647\n' > "$work/src/bin/svc"
chmod 755 "$work/src/bin/svc"
tar -C "$work/src" -cf "$work/bundle.tar" bin
hex=$(sha256sum "$work/bundle.tar" | cut -d' ' -f1)
cp "$work/bundle.tar" "$work/blobs/sha256/$hex"
decl="$work/decl.toml"
: > "$decl"
user=${MESH_BENCH_USER:+, User = \"$MESH_BENCH_USER\"}
for i in $(seq -w 1 "$n"); do
  printf '[module.m%s.process.svc]\nbundle = "sha256:%s"\nunit = { ExecStart = "{bundle}/bin/svc", Restart = "always"%s }\n\n' \
    "$i" "$hex" "$user" >> "$decl"
done
empty="$work/empty.toml"
printf 'node = "bench"\nempty = true\n' > "$empty"

args() {
  if [ "$1" = systemd ]; then
    echo "--supervisor systemd --unit-dir $sdns/etc"
  else
    echo "--supervisor builtin"
  fi
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }

echo "mesh-host: $("$bin" --version) ($bin)"
echo "machine:   $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), shared"
echo "method:    $n process resources; $runs first applies (each from an empty root, then"
echo "           stopped), then $runs no-op applies; medians of $runs; calls = start +"
echo "           restart + reload made by the no-op cycles."
echo
printf '| %-8s | %-9s | %-17s | %-14s | %-15s | %-5s |\n' backend processes "first apply ms" "no-op wall ms" "no-op cycle ms" calls
printf '|----------|-----------|-------------------|----------------|-----------------|-------|\n'

for backend in builtin systemd; do
  if [ "$backend" = systemd ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
      echo "| systemd  | skipped: needs root and unshare |"; continue
    fi
    sdns=$(mktemp -d /tmp/mesh-bench-sdns.XXXXXX)
    SDNS_OWNER_PID=$$ bash tests/systemd/sdns.sh start "$sdns" >/dev/null
    export $(bash tests/systemd/sdns.sh env "$sdns")
  fi
  root="$work/root-$backend"
  mkdir -p "$root"
  common=(--root "$root" --blobs "$work/blobs" --node bench $(args "$backend"))
  firsts=()
  for r in $(seq "$runs"); do
    rm -rf "$root"; mkdir -p "$root"
    start=$(date +%s%N)
    "$bin" apply "$decl" "${common[@]}" >/dev/null
    end=$(date +%s%N)
    firsts+=($(( (end - start) / 1000000 )))
    [ "$r" -lt "$runs" ] && "$bin" apply "$empty" "${common[@]}" >/dev/null
  done
  walls=() cycles=() calls=0
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    out=$("$bin" apply "$decl" "${common[@]}" --json)
    end=$(date +%s%N)
    walls+=($(( (end - start) / 1000000 )))
    summary=${out##*\"summary\":}
    cycles+=("$(echo "$summary" | grep -o '"ms":[0-9]*' | head -1 | cut -d: -f2)")
    sup=${summary##*\"supervisor\":}
    for k in start restart reload; do calls=$((calls + $(echo "$sup" | field "$k"))); done
  done
  printf '| %-8s | %9s | %17s | %14s | %15s | %5s |\n' "$backend" "$n" \
    "$(printf '%s\n' "${firsts[@]}" | median)" "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${cycles[@]}" | median)" "$calls"
done
