#!/usr/bin/env bash
# Unpacking a bundle of FILES files totalling ~SIZE MB (default 20,000 and 200:
# 10 KiB each, random bytes, in 100 directories, an uncompressed tar): the first
# apply of one `archive` resource from an empty root (fetch, unpack with every
# check, sync, switch in, record), against `tar -xf` of the same tarball
# followed by `sync`. Wall time, medians of RUNS alternating runs (a fresh
# target each run), and the ratio.
#   bench/unpack_vs_tar.sh [BUILD_DIR]   (default: build)
#   env: MESH_BENCH_RUNS (5), MESH_BENCH_FILES (20000), MESH_BENCH_MB (200),
#        MESH_BENCH_DIR (/var/tmp: a disk, not tmpfs), MESH_BENCH_BIN
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=${MESH_BENCH_BIN:-$PWD/$build/bin/mesh-host}
runs=${MESH_BENCH_RUNS:-5}
files=${MESH_BENCH_FILES:-20000}
mb=${MESH_BENCH_MB:-200}
[ -x "$bin" ] || { echo "no $bin: run scripts/build first" >&2; exit 1; }
work=$(mktemp -d "${MESH_BENCH_DIR:-/var/tmp}/mesh-bench-unpack.XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
now() { date +%s%N; }

size=$(( mb * 1024 * 1024 / files ))
mkdir -p "$work/src" "$work/blobs/sha256"
head -c $(( size * 64 )) /dev/urandom > "$work/pool"
python3 - "$work/src" "$files" "$size" "$work/pool" <<'PY'
import os, sys
root, n, size, pool = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), open(sys.argv[4], 'rb').read()
for i in range(n):
    d = os.path.join(root, 'd%03d' % (i % 100))
    os.makedirs(d, exist_ok=True)
    off = (i * 7919) % (len(pool) - size)
    with open(os.path.join(d, 'f%05d' % i), 'wb') as f:
        f.write(pool[off:off + size] + i.to_bytes(4, 'little'))
PY
tar -C "$work/src" -cf "$work/bundle.tar" .
rm -rf "$work/src" "$work/pool"
hex=$(sha256sum "$work/bundle.tar" | cut -d' ' -f1)
cp "$work/bundle.tar" "$work/blobs/sha256/$hex"
printf 'node = "bench"\n[module.b.archive.site]\npath = "/srv/site"\nbundle = "sha256:%s"\n' "$hex" > "$work/decl.toml"

echo "mesh-host: $("$bin" --version) ($bin)"
echo "machine:   $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), shared with other builds"
echo "disk:      $(df -T "$work" | awk 'NR==2 {print $2, $1}') ($work)"
echo "bundle:    $files files of $size bytes, $(du -m "$work/bundle.tar" | cut -f1) MB uncompressed tar"
echo "method:    runs alternate (mesh-host apply, tar -xf + sync), a fresh target each; medians of $runs"
echo
meshes=() tars=()
for r in $(seq "$runs"); do
  # Every target kept until the end: on ext4, creating files where thousands
  # were just deleted is much slower (the inode allocator steps over recently
  # freed inodes), a cost neither side should pay here. Needs ~2 x RUNS x SIZE.
  mkdir -p "$work/root.$r" "$work/tar.$r"; sync
  t0=$(now)
  "$bin" apply "$work/decl.toml" --root "$work/root.$r" --blobs "$work/blobs" --node bench >"$work/out" 2>&1 ||
    { cat "$work/out" >&2; exit 1; }
  t1=$(now)
  meshes+=($(( (t1 - t0) / 1000000 )))
  sync
  t0=$(now)
  tar -C "$work/tar.$r" -xf "$work/bundle.tar" && sync
  t1=$(now)
  tars+=($(( (t1 - t0) / 1000000 )))
  echo "run $r: mesh-host ${meshes[-1]} ms, tar -x + sync ${tars[-1]} ms" >&2
done
m=$(printf '%s\n' "${meshes[@]}" | median)
t=$(printf '%s\n' "${tars[@]}" | median)
printf '| %-22s | %10s |\n' "" "median s"
printf '|------------------------|------------|\n'
printf '| %-22s | %10.2f |\n' "mesh-host apply" "$(echo "$m/1000" | bc -l)"
printf '| %-22s | %10.2f |\n' "tar -xf + sync" "$(echo "$t/1000" | bc -l)"
printf '| %-22s | %9.2fx |\n' "mesh-host / tar" "$(echo "$m/$t" | bc -l)"
