#!/usr/bin/env bash
# A one-file update beside another program's unwritten data: `mesh-host apply` of
# a declaration whose one file changed, on a quiet file system and while a
# neighbour holds MiB of dirty pages on the same one (a new file written and not
# synced before each run; Dirty in /proc/meminfo shows it). Wall time of the
# apply, and how much of the neighbour's data the apply forced out (Dirty before
# and after). Quiet and dirty runs interleaved; medians and ranges.
#   bench/dirty_neighbour.sh [BUILD_DIR]   (default: build)
#   env: MESH_BENCH_RUNS (7), MESH_BENCH_DIRTY_MB (2048),
#        MESH_BENCH_BASE (another mesh-host to run side by side, e.g. a baseline)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$PWD/$build/bin/mesh-host
runs=${MESH_BENCH_RUNS:-7}
mb=${MESH_BENCH_DIRTY_MB:-2048}
[ -x "$bin" ] || { echo "no $bin: run scripts/build first" >&2; exit 1; }
bins=("$bin")
[ -n "${MESH_BENCH_BASE:-}" ] && bins+=("$MESH_BENCH_BASE")

# On the file system that holds /var/tmp (not a tmpfs /tmp): a disk's.
work=$(mktemp -d /var/tmp/mesh-bench-dirty.XXXXXX)
trap 'rm -rf "$work"' EXIT

dirty_kb() { awk '/^Dirty:/ {print $2}' /proc/meminfo; }
neighbour() {
  # A new file each time: ext4 writes out a file truncated and written again as
  # it is closed (auto_da_alloc).
  rm -f "$work/neighbour"
  dd if=/dev/zero of="$work/neighbour" bs=1M count="$mb" status=none
}
now_us() { date +%s%6N; }

declare -A ms forced
n=0
for r in $(seq "$runs"); do
  for b in "${!bins[@]}"; do
    root="$work/root-$b"
    mkdir -p "$root"
    for load in quiet dirty; do
      n=$((n + 1))
      printf 'node = "bench"\n[module.m.file.conf]\npath = "/etc/app.conf"\ncontent = "version = %s\\n"\n' \
        "$n" > "$work/decl.toml"
      sync
      [ "$load" = dirty ] && neighbour
      before=$(dirty_kb)
      t0=$(now_us)
      "${bins[$b]}" apply "$work/decl.toml" --root "$root" --state-dir "$root/.state" \
        --blobs "$work" --node bench >/dev/null
      t1=$(now_us)
      after=$(dirty_kb)
      ms[$b-$load]+="$(( (t1 - t0) / 1000 )).$(( (t1 - t0) % 1000 / 100 )) "
      forced[$b-$load]+="$(( (before - after) / 1024 )) "
    done
  done
done
rm -f "$work/neighbour"

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { tr ' ' '\n' | grep . | sort -g | sed -n '1p;$p' | paste -sd- ; }
echo "machine: $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s), $(df -T "$work" | awk 'NR==2 {print $2}') on $(df "$work" | awk 'NR==2 {print $1}'), shared"
echo "method:  a one-file change applied; $runs runs each, interleaved; neighbour: $mb MiB unsynced"
echo
printf '| %-40s | %-20s | %-22s | %-10s | %-16s |\n' mesh-host "quiet ms" "beside dirty data ms" ratio "neighbour's MiB forced out"
printf '|------------------------------------------|----------------------|------------------------|------------|------------------|\n'
for b in "${!bins[@]}"; do
  q=$(echo "${ms[$b-quiet]}" | median)
  d=$(echo "${ms[$b-dirty]}" | median)
  printf '| %-40s | %-20s | %-22s | %-10s | %-16s |\n' "${bins[$b]}" \
    "$q ($(echo "${ms[$b-quiet]}" | range))" "$d ($(echo "${ms[$b-dirty]}" | range))" \
    "$(awk -v d="$d" -v q="$q" 'BEGIN {printf "%.1fx", d / q}')" "$(echo "${forced[$b-dirty]}" | median)"
done
