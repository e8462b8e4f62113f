#!/usr/bin/env bash
# A durable first apply of N files (~200 bytes each, in 100 directories, from an
# empty target), whole process: mesh-host against CFEngine's cf-agent with an
# equivalent policy (`files:` promises with `content` and `perms`), wall time,
# medians of RUNS alternating runs (a fresh target each run), and the ratio.
# Installs nothing: without cf-agent (apt-get install cfengine3) it measures
# mesh-host alone.
#   bench/first_apply_vs_cfengine.sh [BUILD_DIR] [N…]   (default: build, 5000)
#   env: MESH_BENCH_RUNS (5), MESH_BENCH_DIR (/var/tmp: a disk, not tmpfs),
#        MESH_BENCH_BIN (another mesh-host binary, e.g. a baseline)
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
[ -n "$cf" ] || echo "cf-agent not found: 'apt-get install cfengine3' to compare (measuring mesh-host alone)" >&2

work=$(mktemp -d "${MESH_BENCH_DIR:-/var/tmp}/mesh-bench-first.XXXXXX")
trap 'rm -rf "$work"' EXIT

ms_now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ~200 bytes, distinct per file, nothing TOML or CFEngine would escape.
content() { awk -v i="$1" 'BEGIN { s = sprintf("file %05d ", i); a = "abcdefghijklmnopqrstuvwxyz";
  while (length(s) < 199) s = s substr(a, length(s) % 26 + 1, 1); print s }'; }

gen() {  # N DIR ROOT: decl.toml and policy.cf
  awk -v n="$1" -v decl="$2/decl.toml" -v pol="$2/policy.cf" -v root="$3" 'BEGIN {
    a = "abcdefghijklmnopqrstuvwxyz"
    print "bundle agent main\n{\n  files:" > pol
    for (i = 0; i < n; i++) {
      s = sprintf("file %05d ", i); while (length(s) < 199) s = s substr(a, length(s) % 26 + 1, 1)
      p = sprintf("/srv/bench/d%03d/f%05d", i % 100, i)
      printf "[module.bench.file.f%05d]\npath = \"%s\"\ncontent = \"\"\"%s\n\"\"\"\n\n", i, p, s > decl
      printf "    \"%s%s\"\n      create => \"true\",\n      content => \"%s\n\",\n      perms => m(\"644\");\n", root, p, s > pol
    }
    print "}\nbody perms m(mode)\n{\n  mode => \"$(mode)\";\n  rxdirs => \"false\";\n}" > pol
  }'
}

echo "mesh-host: $("$bin" --version) ($bin)"
if [ -n "$cf" ]; then echo "cf-agent:  $("$cf" --version | head -1) ($cf)"; else echo "cf-agent:  not installed"; fi
echo "machine:   $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), shared with other builds"
echo "disk:      $(df -T "$work" | awk 'NR==2 {print $2, $1}') ($work)"
echo "method:    a fresh, empty target each run; runs alternate (mesh-host, cf-agent); medians of $runs"
echo
printf '| %6s | %15s | %15s | %17s |\n' N "mesh-host s" "cf-agent s" "cf-agent / mesh"
printf '|--------|-----------------|-----------------|-------------------|\n'
for n in "${sizes[@]}"; do
  dir="$work/n$n"
  mkdir -p "$dir/cfwork/bin"
  gen "$n" "$dir" "@ROOT@"
  if [ -n "$cf" ]; then
    ln -sf "$(dirname "$cf")/cf-promises" "$dir/cfwork/bin/cf-promises"
    CFENGINE_TEST_OVERRIDE_WORKDIR="$dir/cfwork" "$(dirname "$cf")/cf-key" >/dev/null 2>&1
  fi
  mesh=() cfs=()
  for r in $(seq "$runs"); do
    # A new target each run, all removed at the end: on ext4, creating files
    # where thousands were just deleted is much slower (the inode allocator
    # steps over recently freed inodes), a cost neither tool should pay here.
    mkdir -p "$dir/root.$r"; sync
    t0=$(ms_now)
    "$bin" apply "$dir/decl.toml" --root "$dir/root.$r" --node bench >"$dir/out" 2>&1 ||
      { cat "$dir/out" >&2; exit 1; }
    t1=$(ms_now)
    grep -q "cycle 1: $n created" "$dir/out" || { echo "mesh-host did not create $n files:" >&2; tail -3 "$dir/out" >&2; exit 1; }
    mesh+=($(( (t1 - t0) / 1000000 )))
    if [ -n "$cf" ]; then
      mkdir -p "$dir/cfroot.$r"; sync
      t0=$(ms_now)
      sed "s|@ROOT@|$dir/cfroot.$r|" "$dir/policy.cf" >"$dir/policy.$r.cf"
      CFENGINE_TEST_OVERRIDE_WORKDIR="$dir/cfwork" "$cf" -K -f "$dir/policy.$r.cf" >"$dir/cfout" 2>&1 ||
        { tail -5 "$dir/cfout" >&2; exit 1; }
      t1=$(ms_now)
      [ "$(find "$dir/cfroot.$r" -type f | wc -l)" -eq "$n" ] || { echo "cf-agent did not create $n files" >&2; exit 1; }
      cfs+=($(( (t1 - t0) / 1000000 )))
    fi
    echo "N=$n run $r: mesh-host ${mesh[-1]} ms${cf:+, cf-agent ${cfs[-1]:-} ms}" >&2
  done
  m=$(printf '%s\n' "${mesh[@]}" | median)
  if [ -n "$cf" ]; then
    c=$(printf '%s\n' "${cfs[@]}" | median)
    printf '| %6s | %15.2f | %15.2f | %16.1fx |\n' "$n" "$(echo "$m/1000" | bc -l)" "$(echo "$c/1000" | bc -l)" "$(echo "$c/$m" | bc -l)"
  else
    printf '| %6s | %15.2f | %15s | %17s |\n' "$n" "$(echo "$m/1000" | bc -l)" - -
  fi
done
