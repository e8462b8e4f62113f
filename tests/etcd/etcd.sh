#!/bin/bash
# etcd.sh — a throwaway etcd (Debian's etcd-server, /usr/bin/etcd) on 127.0.0.1 for tests.
#
#   etcd.sh start DIR   start etcd with its data in DIR/data on a random free client and peer
#                       port; returns once /health answers true and prints the client URL
#                       (also in DIR/url; the PID is in DIR/pid, the log in DIR/etcd.log)
#   etcd.sh stop DIR    stop it (SIGTERM, SIGKILL after 5 s) and remove DIR
#                       (ETCD_KEEP=1 keeps DIR for inspection)
#   etcd.sh pause DIR   stop it but keep its data and ports (an outage)
#   etcd.sh resume DIR  start it again on the same ports with the same data
# Env: ETCD_OWNER_PID=PID  at start: a dead-man switch stops etcd when PID exits
# Fast raft timings (10 ms heartbeat, 100 ms election) make a single node healthy in ~0.2 s.
set -euo pipefail

die() { echo "etcd.sh: $*" >&2; exit 1; }
cmd=${1:-}; D=${2:-}
if [ -z "$cmd" ] || [ -z "$D" ]; then die "usage: $0 start|stop DIR"; fi

# Zombies pass `kill -0`; read the state from /proc instead.
alive() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st:0:1}" != Z ]; }

port_free() { ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }
random_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 30000 ))
    port_free "$p" && { echo "$p"; return; }
  done
  die "no free port found"
}

# Starts etcd on the given client and peer ports with its data in DIR/data (kept if there).
launch() {
  local url=http://127.0.0.1:$1
  echo "$1 $2" > "$D/ports"
  # env -i: etcd also reads its flags from ETCD_* variables; ignore any in the environment.
  setsid env -i PATH=/usr/bin:/bin /usr/bin/etcd --name mesh-test --data-dir "$D/data" \
    --listen-client-urls "$url" --advertise-client-urls "$url" \
    --listen-peer-urls "http://127.0.0.1:$2" \
    --initial-advertise-peer-urls "http://127.0.0.1:$2" \
    --initial-cluster "mesh-test=http://127.0.0.1:$2" --initial-cluster-state new \
    --heartbeat-interval=10 --election-timeout=100 \
    --logger zap --log-outputs "$D/etcd.log" </dev/null >/dev/null 2>&1 &
  echo $! > "$D/pid"
}

terminate() {
  local pid
  pid=$(cat "$D/pid" 2>/dev/null || true)
  if [ -n "$pid" ] && alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.05; done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
}

resume() {
  [ -f "$D/ports" ] || die "$D has no etcd to resume (no $D/ports)"
  local cport pport
  read -r cport pport < "$D/ports"
  launch "$cport" "$pport"
  for _ in $(seq 1 200); do
    if curl -sf --noproxy '*' --max-time 1 "http://127.0.0.1:$cport/health" 2>/dev/null | grep -q '"health":"true"'; then
      echo "http://127.0.0.1:$cport"
      return 0
    fi
    alive "$(cat "$D/pid")" || die "etcd exited on resume; log: $(tail -c 2000 "$D/etcd.log")"
    sleep 0.05
  done
  die "etcd not healthy 10 s after resume"
}

start() {
  [ -x /usr/bin/etcd ] || die "/usr/bin/etcd is missing: run scripts/install-deps"
  mkdir -p "$D"
  local cport pport url pid
  for _ in 1 2 3 4 5; do   # a port taken between the check and the bind: try others
    cport=$(random_port); pport=$(random_port)
    [ "$cport" = "$pport" ] && continue
    url=http://127.0.0.1:$cport
    rm -rf "$D/data"
    launch "$cport" "$pport"
    pid=$(cat "$D/pid")
    for _ in $(seq 1 200); do   # up to ~10 s
      if curl -sf --noproxy '*' --max-time 1 "$url/health" 2>/dev/null | grep -q '"health":"true"'; then
        echo "$url" > "$D/url"
        if [ -n "${ETCD_OWNER_PID:-}" ]; then   # dead-man switch: the owner died without stop
          # shellcheck disable=SC2016  # expanded by the inner bash
          setsid bash -c 'alive() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st:0:1}" != Z ]; }; while alive "$1" && [ -d "$2" ]; do sleep 1; done; [ -d "$2" ] && exec "$3" stop "$2"' \
            _ "$ETCD_OWNER_PID" "$D" "$(readlink -f "$0")" </dev/null >/dev/null 2>&1 &
        fi
        echo "$url"
        return 0
      fi
      alive "$pid" || break
      sleep 0.05
    done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; die "etcd not healthy after 10 s; log: $(tail -c 2000 "$D/etcd.log")"; fi
    grep -q "address already in use" "$D/etcd.log" 2>/dev/null || die "etcd exited; log: $(tail -c 2000 "$D/etcd.log" 2>/dev/null)"
    rm -f "$D/etcd.log"
  done
  die "etcd could not bind free ports after 5 attempts"
}

stop() {
  [ -d "$D" ] || return 0
  terminate
  [ "${ETCD_KEEP:-0}" = 1 ] || rm -rf "$D"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  pause) terminate ;;
  resume) resume ;;
  *) die "unknown command $cmd (start|stop|pause|resume)" ;;
esac
