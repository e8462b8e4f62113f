#!/usr/bin/env bash
# What drift watching costs at idle: an agent (--interval 5m, builtin supervisor) over N
# managed files in D directories, after its first cycle; prints the directories it
# watches and the CPU it used (utime + stime from /proc) over IDLE seconds of nothing
# happening, then the time from one file's modification to its repair by event.
#   bench/drift_idle.sh [BUILD_DIR] [N files, default 10000] [D dirs, default 100] [IDLE s, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}; n=${2:-10000}; dirs=${3:-100}; idle=${4:-30}
bin=$build/bin/mesh-host
[ -x "$bin" ] || { echo "no $bin: build first (scripts/build)" >&2; exit 2; }
work=$(mktemp -d /var/tmp/mesh-drift-idle.XXXXXX)
trap 'kill "$agent" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root"
decl=$work/decl.toml
for ((i = 0; i < n; i++)); do
  printf '[module.m.file.f%d]\npath = "/srv/d%d/f%d"\ncontent = "file %d\\n"\n\n' \
    "$i" $((i % dirs)) "$i" "$i"
done > "$decl"
"$bin" run --declaration "$decl" --interval 5m --splay 0 --root "$work/root" --node bench \
  --supervisor builtin --log-format json 2> "$work/agent.log" &
agent=$!
until grep -q '"trigger":"start".*"created"\|"created".*"trigger":"start"' "$work/agent.log" 2>/dev/null; do
  kill -0 "$agent" || { cat "$work/agent.log"; exit 1; }
  sleep 0.2
done
ticks() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$idle"
after=$(ticks)
watched=$("$bin" status --json --root "$work/root" --node bench | sed -n 's/.*"watched_dirs":\([0-9]*\).*/\1/p')
echo "mesh-host drift watch: $n files in $dirs directories, $watched directories watched"
echo "CPU at idle over ${idle}s: $(( (after - before) * 1000 / hz )) ms ($(nproc) cores, $(uname -r))"
start=$(date +%s%N)
echo "changed" > "$work/root/srv/d0/f0"
until [ "$(cat "$work/root/srv/d0/f0")" = "file 0" ]; do sleep 0.01; done
echo "a modified file repaired by event in $(( ($(date +%s%N) - start) / 1000000 )) ms"
