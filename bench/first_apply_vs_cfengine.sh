#!/usr/bin/env bash
# A durable first apply of N files (~200 bytes each, from an empty target) in two
# shapes side by side — spread over 100 directories, and all in one directory —,
# whole process: mesh-host against CFEngine's cf-agent with an equivalent policy
# (`files:` promises with `content` and `perms`), cf-agent with its work directory
# as packaged (/var/lib/cfengine3 on Debian) and with a fresh one the bench makes
# (-w) each run; wall time, medians of RUNS alternating runs (a fresh target and a
# fresh store each run), and the ratios.
# Installs nothing: without cf-agent (apt-get install cfengine3) it measures
# mesh-host alone.
#   bench/first_apply_vs_cfengine.sh [BUILD_DIR] [N…]   (default: build, 5000)
#   env: MESH_BENCH_RUNS (5), MESH_BENCH_DIR (/var/tmp: a disk, not tmpfs),
#        MESH_BENCH_BIN (another mesh-host binary to measure instead),
#        MESH_BENCH_BASE (a second mesh-host run in the same rounds, e.g. a baseline:
#        its medians and its ratio to the first printed after the table)
# With BUILD_DIR/bench/mesh_bench_sync_strategies built, each round also times the
# durable floor: a process that only creates the N files durably the way mesh-host
# does — written under temp names, an fsync of each (16 threads), renamed, an fsync
# of each directory — and nothing else (no declaration, no store). cf-agent's time
# over the floor's is the most any tool that makes each file durable could reach
# against it here; it is printed after the table.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
sizes=("${@:-5000}")
[ ${#sizes[@]} -eq 0 ] && sizes=(5000)
bin=${MESH_BENCH_BIN:-$PWD/$build/bin/mesh-host}
runs=${MESH_BENCH_RUNS:-5}
[ -x "$bin" ] || { echo "no $bin: run scripts/build first" >&2; exit 1; }
cf=$(command -v cf-agent || true)
floorbin=$PWD/$build/bench/mesh_bench_sync_strategies
[ -x "$floorbin" ] || floorbin=""
[ -n "$cf" ] || echo "cf-agent not found: 'apt-get install cfengine3' to compare (measuring mesh-host alone)" >&2

work=$(mktemp -d "${MESH_BENCH_DIR:-/var/tmp}/mesh-bench-first.XXXXXX")
trap 'rm -rf "$work"' EXIT

ms_now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ~200 bytes, distinct per file, nothing TOML or CFEngine would escape.
content() { awk -v i="$1" 'BEGIN { s = sprintf("file %05d ", i); a = "abcdefghijklmnopqrstuvwxyz";
  while (length(s) < 199) s = s substr(a, length(s) % 26 + 1, 1); print s }'; }

gen() {  # N DIRS DIR ROOT: decl.toml and policy.cf, N files over DIRS directories
  awk -v n="$1" -v dirs="$2" -v decl="$3/decl.toml" -v pol="$3/policy.cf" -v root="$4" 'BEGIN {
    a = "abcdefghijklmnopqrstuvwxyz"
    print "bundle agent main\n{\n  files:" > pol
    for (i = 0; i < n; i++) {
      s = sprintf("file %05d ", i); while (length(s) < 199) s = s substr(a, length(s) % 26 + 1, 1)
      p = sprintf("/srv/bench/d%03d/f%05d", i % dirs, i)
      printf "[module.bench.file.f%05d]\npath = \"%s\"\ncontent = \"\"\"%s\n\"\"\"\n\n", i, p, s > decl
      printf "    \"%s%s\"\n      create => \"true\",\n      content => \"%s\n\",\n      perms => m(\"644\");\n", root, p, s > pol
    }
    print "}\nbody perms m(mode)\n{\n  mode => \"$(mode)\";\n  rxdirs => \"false\";\n}" > pol
  }'
}

# timed OUTVAR CMD…: runs CMD, its output in $dir/out, the wall ms appended to OUTVAR.
timed() {
  local -n into=$1
  shift
  local t0 t1
  t0=$(ms_now)
  "$@" >"$dir/out" 2>&1 || { tail -5 "$dir/out" >&2; exit 1; }
  t1=$(ms_now)
  into+=($(( (t1 - t0) / 1000000 )))
}

shapes=(100 1)  # files spread over 100 directories; all in one
packaged=""
if [ -n "$cf" ]; then
  packaged=$("$cf" --show-evaluated-vars -f /dev/null 2>/dev/null | awk '$1 ~ /sys\.workdir$/ {print $2}' || true)
  packaged=${packaged:-/var/lib/cfengine3}
fi
echo "mesh-host: $("$bin" --version) ($bin)"
if [ -n "$cf" ]; then echo "cf-agent:  $("$cf" --version | head -1) ($cf)"; else echo "cf-agent:  not installed"; fi
echo "machine:   $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1 /proc/loadavg), shared with other builds"
echo "disk:      $(df -T "$work" | awk 'NR==2 {print $2, $1}') ($work)"
echo "method:    N files in 100 directories and in 1; a fresh, empty target and a fresh store"
echo "           each run; cf-agent with its work directory as packaged (pkg: ${packaged:-none})"
echo "           and a fresh one the bench makes each run (-w: a copy of one with a key pair);"
echo "           runs alternate (per run: each shape: mesh-host, cf pkg, cf -w); medians of $runs"
echo
printf '| %6s | %4s | %11s | %14s | %13s | %13s | %12s |\n' N dirs "mesh-host s" "cf-agent pkg s" "cf-agent -w s" "cf pkg / mesh" "cf -w / mesh"
printf '|-------:|-----:|------------:|---------------:|--------------:|--------------:|-------------:|\n'
for n in "${sizes[@]}"; do
  if [ -n "$cf" ]; then  # the bench's work directory, copied fresh for each run
    mkdir -p "$work/cfwork/bin"
    ln -sf "$(dirname "$cf")/cf-promises" "$work/cfwork/bin/cf-promises"
    CFENGINE_TEST_OVERRIDE_WORKDIR="$work/cfwork" "$(dirname "$cf")/cf-key" >/dev/null 2>&1
  fi
  for d in "${shapes[@]}"; do
    mkdir -p "$work/n$n-d$d"
    gen "$n" "$d" "$work/n$n-d$d" "@ROOT@"
  done
  declare -A mesh=() cfp=() cfw=() base=() floor=()
  for r in $(seq "$runs"); do
    for d in "${shapes[@]}"; do
      dir=$work/n$n-d$d
      # A new target each run, all removed at the end: on ext4, creating files
      # where thousands were just deleted is much slower (the inode allocator
      # steps over recently freed inodes), a cost neither tool should pay here.
      # The store is under the target: fresh too.
      mkdir -p "$dir/root.$r"; sync
      m=() p=() w=()
      timed m "$bin" apply "$dir/decl.toml" --root "$dir/root.$r" --node bench
      grep -q "cycle 1: $n created" "$dir/out" || { echo "mesh-host did not create $n files:" >&2; tail -3 "$dir/out" >&2; exit 1; }
      mesh[$d]+=" ${m[0]}"
      if [ -n "$floorbin" ]; then
        mkdir -p "$dir/floor.$r"; sync
        f=()
        timed f "$floorbin" --only pool --keep --runs 1 --files "$n" --dirs "$d" --dir "$dir/floor.$r"
        floor[$d]+=" ${f[0]}"
      fi
      if [ -n "${MESH_BENCH_BASE:-}" ]; then
        mkdir -p "$dir/base.$r"; sync
        b=()
        timed b "$MESH_BENCH_BASE" apply "$dir/decl.toml" --root "$dir/base.$r" --node bench
        base[$d]+=" ${b[0]}"
      fi
      if [ -n "$cf" ]; then
        for how in pkg w; do
          target=$dir/cf$how.$r
          mkdir -p "$target"
          sed "s|@ROOT@|$target|" "$dir/policy.cf" >"$dir/policy.$how.$r.cf"
          args=(-K -f "$dir/policy.$how.$r.cf")
          if [ $how = w ]; then
            rm -rf "$dir/cfwork.$r"; cp -a "$work/cfwork" "$dir/cfwork.$r"
            args=(-w "$dir/cfwork.$r" "${args[@]}")
          fi
          sync
          t=()
          timed t "$cf" "${args[@]}"
          [ "$(find "$target" -type f | wc -l)" -eq "$n" ] || { echo "cf-agent ($how) did not create $n files" >&2; exit 1; }
          if [ $how = pkg ]; then p=("${t[0]}"); cfp[$d]+=" ${t[0]}"; else w=("${t[0]}"); cfw[$d]+=" ${t[0]}"; fi
        done
      fi
      echo "N=$n dirs=$d run $r: mesh-host ${m[0]} ms${floorbin:+, floor ${f[0]:-} ms}${MESH_BENCH_BASE:+, base ${b[0]:-} ms}${cf:+, cf-agent ${p[0]:-} ms (pkg), ${w[0]:-} ms (-w)}" >&2
    done
  done
  for d in "${shapes[@]}"; do
    m=$(printf '%s\n' ${mesh[$d]} | median)
    if [ -n "$cf" ]; then
      p=$(printf '%s\n' ${cfp[$d]} | median)
      w=$(printf '%s\n' ${cfw[$d]} | median)
      printf '| %6s | %4s | %11.2f | %14.2f | %13.2f | %12.1fx | %11.1fx |\n' "$n" "$d" \
        "$(echo "$m/1000" | bc -l)" "$(echo "$p/1000" | bc -l)" "$(echo "$w/1000" | bc -l)" \
        "$(echo "$p/$m" | bc -l)" "$(echo "$w/$m" | bc -l)"
    else
      printf '| %6s | %4s | %11.2f | %14s | %13s | %13s | %12s |\n' "$n" "$d" "$(echo "$m/1000" | bc -l)" - - - -
    fi
  done
  if [ -n "$floorbin" ]; then
    for d in "${shapes[@]}"; do
      m=$(printf '%s\n' ${mesh[$d]} | median)
      f=$(printf '%s\n' ${floor[$d]} | median)
      printf 'N=%s dirs=%s: durable floor %.2f s (mesh-host %.2fx it)' "$n" "$d" \
        "$(echo "$f/1000" | bc -l)" "$(echo "$m/$f" | bc -l)"
      if [ -n "$cf" ]; then
        p=$(printf '%s\n' ${cfp[$d]} | median)
        w=$(printf '%s\n' ${cfw[$d]} | median)
        printf '; cf-agent over the floor: %.1fx (pkg), %.1fx (-w)' \
          "$(echo "$p/$f" | bc -l)" "$(echo "$w/$f" | bc -l)"
      fi
      echo
    done
  fi
  if [ -n "${MESH_BENCH_BASE:-}" ]; then
    for d in "${shapes[@]}"; do
      m=$(printf '%s\n' ${mesh[$d]} | median)
      b=$(printf '%s\n' ${base[$d]} | median)
      printf 'N=%s dirs=%s: base (%s) %.2f s, %.2fx the time of mesh-host\n' "$n" "$d" \
        "$MESH_BENCH_BASE" "$(echo "$b/1000" | bc -l)" "$(echo "$b/$m" | bc -l)"
    done
  fi
  unset mesh cfp cfw base floor
done
