#!/usr/bin/env bash
# How long a restart the agent owes takes on a busy node, with the packaged
# unit's CPU weight (CPUWeight=20) and without it (100, systemd's default). Two
# agents run side by side (`mesh-host run`, the systemd backend, a namespace
# systemd from tests/systemd/sdns.sh holding their services), each with a service
# that restarts on a config file. Each run writes a new declaration (the agent
# wakes on it) and measures from that write to the service's new
# ExecMainStartTimestamp. Busy = one CPU spinner per core and a writer that
# fsyncs 256 MiB files in a loop, at the default weight.
# The weights are given the way systemd gives CPUWeight= where the cpu controller
# is a cgroup v1 one (this machine's, and the namespace systemd has none):
# cpu.shares = weight x 1024 / 100, in a cgroup of the v1 cpu hierarchy. IOWeight=
# needs the BFQ scheduler (or io.cost); with mq-deadline it changes nothing and
# is not measured. The service has no start limit (StartLimitIntervalSec=0): the
# bench restarts it more often than systemd allows by default. Conditions
# interleaved run by run; medians and ranges in ms.
#   bench/owed_restart_busy.sh [BUILD_DIR]   (default: build; needs root)
#   env: MESH_BENCH_RUNS (9)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$PWD/$build/bin/mesh-host
runs=${MESH_BENCH_RUNS:-9}
[ -x "$bin" ] || { echo "no $bin: run scripts/build first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root (a namespace systemd)" >&2; exit 1; }

work=$(mktemp -d /tmp/mesh-bench-owed.XXXXXX)
chmod 755 "$work"
sdns=$work/ns
cleanup() {
  bash tests/systemd/sdns.sh stop "$sdns" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM
SDNS_OWNER_PID=$$ bash tests/systemd/sdns.sh start "$sdns" >/dev/null
ns() { bash tests/systemd/sdns.sh exec "$sdns" "$@"; }

mkdir -p "$work/src/bin" "$work/blobs/sha256"
printf '#!/bin/sh\nexec sleep 2147483647\n' > "$work/src/bin/svc"
chmod 755 "$work/src/bin/svc"
tar -C "$work/src" -cf "$work/bundle.tar" bin
hex=$(sha256sum "$work/bundle.tar" | cut -d' ' -f1)
cp "$work/bundle.tar" "$work/blobs/sha256/$hex"

# declare WEIGHT N: the declaration of agent WEIGHT at config version N.
declare_it() {
  local w=$1 n=$2 d="$work/decl-$1.toml"
  cat > "$d.new" <<EOF
node = "bench"
[module.w$w.file.conf]
path = "/etc/app.conf"
content = "version = $n\n"
[module.w$w.process.svc]
bundle = "sha256:$hex"
restart-on = ["w$w.conf"]
unit = { ExecStart = "{bundle}/bin/svc", Restart = "always", StartLimitIntervalSec = "0" }
EOF
  mv "$d.new" "$d"
}

started() {  # the service's last start, µs since the epoch
  local t
  t=$(ns systemctl show -p ExecMainStartTimestamp --timestamp=us+utc --value "w$1.service")
  date -d "${t:-none}" +%s%6N 2>/dev/null || echo 0
}

export $(bash tests/systemd/sdns.sh env "$sdns")
cpu=/sys/fs/cgroup/cpu
[ -f $cpu/cpu.shares ] || { echo "no cgroup v1 cpu hierarchy at $cpu" >&2; exit 1; }
# in_cgroup NAME SHARES CMD...: becomes CMD in a new v1 cpu cgroup of that weight.
in_cgroup() {
  local g=$cpu/mesh-bench-$1
  mkdir -p "$g"
  echo "$2" > "$g/cpu.shares"
  shift 2
  exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$g" "$@"
}
agents=()
for w in 100 20; do
  mkdir -p "$work/root-$w" "$work/state-$w"
  declare_it "$w" 0
  in_cgroup "agent-$w" $((w * 1024 / 100)) "$bin" run --declaration "$work/decl-$w.toml" \
    --root "$work/root-$w" --state-dir "$work/state-$w" --blobs "$work/blobs" \
    --supervisor systemd --unit-dir "$sdns/etc" --node bench --interval 1h >"$work/agent-$w.log" 2>&1 &
  agents+=($!)
done
busy_on() {
  for _ in $(seq "$(nproc)"); do in_cgroup busy 1024 sh -c 'while :; do :; done' & done
  in_cgroup busy 1024 sh -c "while :; do dd if=/dev/zero of=$work/busy bs=1M count=256 conv=fsync status=none; done" &
}
busy_off() {  # everything in the busy cgroup, whatever it forked
  local g=$cpu/mesh-bench-busy
  # (-s will not do: a cgroup file's size is always 0)
  while [ -n "$(cat "$g/cgroup.procs" 2>/dev/null)" ]; do
    xargs -r kill -9 < "$g/cgroup.procs" 2>/dev/null || true
    sleep 0.05
  done
}
cleanup() {
  busy_off
  kill "${agents[@]}" 2>/dev/null || true
  wait "${agents[@]}" 2>/dev/null || true
  bash tests/systemd/sdns.sh stop "$sdns" >/dev/null 2>&1 || true
  rmdir $cpu/mesh-bench-* 2>/dev/null || true
  rm -rf "$work"
}
# Both agents up: their services started once.
for w in 100 20; do
  for _ in $(seq 600); do [ "$(started "$w")" != 0 ] && break; sleep 0.05; done
  [ "$(started "$w")" != 0 ] || { echo "agent $w never started its service:" >&2; tail -5 "$work/agent-$w.log" >&2; exit 1; }
done

declare -A ms
n=0
for r in $(seq "$runs"); do
  for load in quiet busy; do
    [ "$load" = busy ] && busy_on
    for w in 100 20; do
      n=$((n + 1))
      before=$(started "$w")
      t0=$(date +%s%6N)
      declare_it "$w" "$n"
      for _ in $(seq 600); do
        now=$(started "$w")
        [ "$now" != "$before" ] && [ "$now" -gt "$t0" ] && break
        sleep 0.05
      done
      [ "$now" != "$before" ] || { echo "agent $w did not restart its service:" >&2; tail -5 "$work/agent-$w.log" >&2; exit 1; }
      ms[$load-$w]+="$(( (now - t0) / 1000 )) "
    done
    [ "$load" = busy ] && busy_off
  done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { tr ' ' '\n' | grep . | sort -n | sed -n '1p;$p' | paste -sd- ; }
echo "mesh-host: $("$bin" --version) ($bin)"
echo "machine:   $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) CPU(s), shared"
echo "method:    declaration written -> the service's new start (systemd's own timestamp);"
echo "           $runs runs per cell, interleaved; busy = $(nproc) spinners + an fsyncing writer"
echo
printf '| %-6s | %-22s | %-22s |\n' load "agent weight 100 (ms)" "agent weight 20 (ms)"
printf '|--------|------------------------|------------------------|\n'
for load in quiet busy; do
  printf '| %-6s | %-22s | %-22s |\n' "$load" \
    "$(echo "${ms[$load-100]}" | median) ($(echo "${ms[$load-100]}" | range))" \
    "$(echo "${ms[$load-20]}" | median) ($(echo "${ms[$load-20]}" | range))"
done
