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
#      ETCD_CLUSTER_TOKEN=T at start/resume: the initial cluster token (default etcd-cluster);
#                           resumed on an emptied DIR/data with another token, it is another
#                           cluster (another cluster ID), as a replaced etcd is
#      ETCD_TLS=1          at start: serve clients over TLS and require client certificates
#                          (--client-cert-auth); certificates made with openssl in DIR/tls:
#                          ca.pem, server.pem/.key (127.0.0.1, localhost), client.pem/.key;
#                          the URL is https://
#      ETCD_AUTH=1         at start: enable etcd auth with a user "mesh" (role "mesh": readwrite
#                          on /mesh/ and /filler) whose password is in DIR/password (0600), and
#                          "root" (password in DIR/root-password)
#      ETCD_AUTH_TOKEN_TTL=S at start: how long an auth token lasts (etcd's default 300 s)
#      (both are kept in DIR/mode, so that resume starts it the same way)
# Fast raft timings (10 ms heartbeat, 100 ms election) make a single node healthy in ~0.2 s.
#
# Cluster mode: three members on loopback (plain http, no auth), for the failure tests.
#   etcd.sh cluster-start DIR      start members 1, 2 and 3 (data in DIR/m1 … DIR/m3, each with
#                                  its pid, ports and etcd.log); returns once every member's
#                                  /health answers true and prints the client URLs, comma-separated
#                                  (also in DIR/urls; member N's alone in DIR/mN/url)
#   etcd.sh cluster-stop DIR       stop every member and remove DIR (ETCD_KEEP=1 keeps it)
#   etcd.sh member-kill DIR N      SIGKILL member N (a crash: data and ports kept)
#   etcd.sh member-stop DIR N      SIGTERM member N, waiting until it is gone
#   etcd.sh member-start DIR N     start member N again with its data; returns once it is healthy
#   etcd.sh member-pause DIR N     SIGSTOP member N: it holds its sockets and answers nothing
#   etcd.sh member-resume DIR N    SIGCONT member N
#   etcd.sh leader DIR             the number of the member that is leader now (waits up to 10 s)
#   etcd.sh member-isolate DIR N   (netns mode) member N can no longer reach its peers nor they
#                                  it; clients still reach it
#   etcd.sh member-heal DIR N      (netns mode) member N reaches its peers again
#   ETCD_NETNS=1 at cluster-start (root): each member in a network namespace of its own, on a
#   veth pair to a bridge made for the cluster, client and peer ports 2379/2380 on its own
#   address (10.231.X.N; the bridge, where clients are, is 10.231.X.254); cluster-stop
#   removes them. Without it every member is on 127.0.0.1.
#   ETCD_OWNER_PID works as for start. Raft timings: 50 ms heartbeat, 500 ms election, so that
#   a loaded machine does not trigger elections of its own.
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
    # Below the kernel's ephemeral range (32768-60999): a port there may be the local end
    # of a client's connection by the time etcd binds it (bind: address already in use).
    p=$(( 20000 + RANDOM % 12000 ))
    port_free "$p" && { echo "$p"; return; }
  done
  die "no free port found"
}

# DIR/mode: "TLS AUTH TOKEN_TTL" as given at start (0 or 1, 0 or 1, seconds or 300).
mode_tls() { local t=0 a=0 l=300; read -r t a l < "$D/mode" || true; [ "$t" = 1 ]; }
mode_auth() { local t=0 a=0 l=300; read -r t a l < "$D/mode" || true; [ "$a" = 1 ]; }
mode_ttl() { local t=0 a=0 l=300; read -r t a l < "$D/mode" || true; echo "${l:-300}"; }
scheme() { if mode_tls; then echo https; else echo http; fi; }

# A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, in DIR/tls.
make_certs() {
  local T=$D/tls
  mkdir -p "$T"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mesh-test-ca" \
    -keyout "$T/ca.key" -out "$T/ca.pem" >/dev/null 2>&1 || die "openssl: cannot make the CA"
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "$T/server.ext"
  printf 'extendedKeyUsage=clientAuth\n' > "$T/client.ext"
  local who
  for who in server client; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=mesh-test-$who" \
      -keyout "$T/$who.key" -out "$T/$who.csr" >/dev/null 2>&1 || die "openssl: cannot make the $who key"
    openssl x509 -req -in "$T/$who.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
      -days 2 -extfile "$T/$who.ext" -out "$T/$who.pem" >/dev/null 2>&1 || die "openssl: cannot sign the $who certificate"
  done
  chmod 600 "$T"/*.key
}

# curl's or etcdctl's TLS options for this etcd ("" without TLS).
curl_tls() { mode_tls && echo "--cacert $D/tls/ca.pem --cert $D/tls/client.pem --key $D/tls/client.key" || true; }
ctl_tls() { mode_tls && echo "--cacert=$D/tls/ca.pem --cert=$D/tls/client.pem --key=$D/tls/client.key" || true; }

healthy() {
  # shellcheck disable=SC2046  # word splitting of the TLS options is wanted
  curl -sf --noproxy '*' --max-time 1 $(curl_tls) "$1/health" 2>/dev/null | grep -q '"health":"true"'
}

# Users, a role for /mesh/, then auth on (etcdctl against the fresh etcd at $1).
enable_auth() {
  local ctl="env -i PATH=/usr/bin:/bin /usr/bin/etcdctl --endpoints=$1 $(ctl_tls)"
  head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$D/password"
  head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$D/root-password"
  chmod 600 "$D/password" "$D/root-password"
  {
    $ctl user add "root:$(cat "$D/root-password")" &&
    $ctl role add mesh &&
    $ctl role grant-permission mesh --prefix=true readwrite /mesh/ &&
    $ctl role grant-permission mesh readwrite /filler &&
    $ctl user add "mesh:$(cat "$D/password")" &&
    $ctl user grant-role mesh mesh &&
    $ctl auth enable
  } >"$D/auth.log" 2>&1 || die "cannot enable auth: $(cat "$D/auth.log")"
}

# Starts etcd on the given client and peer ports with its data in DIR/data (kept if there).
launch() {
  local url tls=()
  url=$(scheme)://127.0.0.1:$1
  echo "$1 $2" > "$D/ports"
  if mode_tls; then
    tls=(--cert-file "$D/tls/server.pem" --key-file "$D/tls/server.key"
         --client-cert-auth --trusted-ca-file "$D/tls/ca.pem")
  fi
  # env -i: etcd also reads its flags from ETCD_* variables; ignore any in the environment.
  setsid env -i PATH=/usr/bin:/bin /usr/bin/etcd --name mesh-test --data-dir "$D/data" \
    --listen-client-urls "$url" --advertise-client-urls "$url" "${tls[@]}" \
    --auth-token-ttl "$(mode_ttl)" \
    --listen-peer-urls "http://127.0.0.1:$2" \
    --initial-advertise-peer-urls "http://127.0.0.1:$2" \
    --initial-cluster "mesh-test=http://127.0.0.1:$2" --initial-cluster-state new \
    --initial-cluster-token "${ETCD_CLUSTER_TOKEN:-etcd-cluster}" \
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
    if healthy "$(scheme)://127.0.0.1:$cport"; then
      echo "$(scheme)://127.0.0.1:$cport"
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
  echo "${ETCD_TLS:-0} ${ETCD_AUTH:-0} ${ETCD_AUTH_TOKEN_TTL:-300}" > "$D/mode"
  if mode_tls; then make_certs; fi
  local cport pport url pid
  for _ in 1 2 3 4 5; do   # a port taken between the check and the bind: try others
    cport=$(random_port); pport=$(random_port)
    [ "$cport" = "$pport" ] && continue
    url=$(scheme)://127.0.0.1:$cport
    rm -rf "$D/data"
    launch "$cport" "$pport"
    pid=$(cat "$D/pid")
    for _ in $(seq 1 200); do   # up to ~10 s
      if healthy "$url"; then
        if mode_auth; then enable_auth "$url"; fi
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

# --- cluster mode -------------------------------------------------------------------------
members="1 2 3"
member_dir() { echo "$D/m$1"; }
# Netns mode: DIR/netns holds "TAG SUBNET" (namespaces mhTAG-N, bridge mhbTAG, 10.231.X).
netns_mode() { [ -f "$D/netns" ]; }
netns_tag() { local t s; read -r t s < "$D/netns"; echo "$t"; }
netns_sub() { local t s; read -r t s < "$D/netns"; echo "$s"; }
member_host() { if netns_mode; then echo "$(netns_sub).$1"; else echo 127.0.0.1; fi; }
member_exec() { if netns_mode; then echo "ip netns exec mh$(netns_tag)-$1"; fi; }

netns_setup() {
  local tag sub br n
  tag=$(( RANDOM % 90000 + 10000 )); sub=10.231.$(( RANDOM % 250 + 1 )); br=mhb$tag
  echo "$tag $sub" > "$D/netns"
  ip link add "$br" type bridge || die "cannot make a bridge (ETCD_NETNS=1 needs root)"
  ip addr add "$sub.254/24" dev "$br" && ip link set "$br" up || die "cannot set up bridge $br"
  for n in $members; do
    ip netns add "mh$tag-$n" || die "cannot make network namespace mh$tag-$n"
    ip link add "mh${tag}h$n" type veth peer name eth0 netns "mh$tag-$n" || die "cannot make a veth pair"
    ip link set "mh${tag}h$n" master "$br" up
    ip -n "mh$tag-$n" addr add "$sub.$n/24" dev eth0
    ip -n "mh$tag-$n" link set eth0 up
    ip -n "mh$tag-$n" link set lo up
  done
}

netns_teardown() {
  netns_mode || return 0
  local tag n; tag=$(netns_tag)
  for n in $members; do ip netns del "mh$tag-$n" 2>/dev/null || true; done
  ip link del "mhb$tag" 2>/dev/null || true
}

# Member N's peers unreachable from it (and it from them): blackhole routes in its namespace.
member_isolate() {
  netns_mode || die "member-isolate needs a cluster started with ETCD_NETNS=1"
  local m
  for m in $members; do
    [ "$m" = "$1" ] || ip -n "mh$(netns_tag)-$1" route add blackhole "$(netns_sub).$m/32"
  done
}
member_heal() {
  netns_mode || die "member-heal needs a cluster started with ETCD_NETNS=1"
  local m
  for m in $members; do
    [ "$m" = "$1" ] || ip -n "mh$(netns_tag)-$1" route del blackhole "$(netns_sub).$m/32" 2>/dev/null || true
  done
}
initial_cluster() {
  local n c p out=""
  for n in $members; do
    read -r c p < "$(member_dir "$n")/ports"
    out="$out${out:+,}m$n=http://$(member_host "$n"):$p"
  done
  echo "$out"
}

# Starts member N with its data (a fresh member joins as one of the new cluster).
launch_member() {
  local M c p
  M=$(member_dir "$1")
  read -r c p < "$M/ports"
  local h; h=$(member_host "$1")
  # shellcheck disable=SC2046  # member_exec is a command prefix (netns mode) or nothing
  setsid $(member_exec "$1") env -i PATH=/usr/bin:/bin /usr/bin/etcd --name "m$1" --data-dir "$M/data" \
    --listen-client-urls "http://$h:$c" --advertise-client-urls "http://$h:$c" \
    --listen-peer-urls "http://$h:$p" --initial-advertise-peer-urls "http://$h:$p" \
    --initial-cluster "$(initial_cluster)" --initial-cluster-state new \
    --initial-cluster-token "${ETCD_CLUSTER_TOKEN:-etcd-cluster}-$(basename "$D")" \
    --heartbeat-interval=50 --election-timeout=500 \
    --logger zap --log-outputs "$M/etcd.log" </dev/null >/dev/null 2>&1 &
  echo $! > "$M/pid"
}

member_healthy() { healthy "$(cat "$(member_dir "$1")/url")"; }

wait_member() {
  local M; M=$(member_dir "$1")
  for _ in $(seq 1 300); do
    member_healthy "$1" && return 0
    alive "$(cat "$M/pid")" || die "member $1 exited; log: $(tail -c 2000 "$M/etcd.log")"
    sleep 0.05
  done
  die "member $1 not healthy after 15 s; log: $(tail -c 2000 "$M/etcd.log")"
}

cluster_start() {
  [ -x /usr/bin/etcd ] || die "/usr/bin/etcd is missing: run scripts/install-deps"
  mkdir -p "$D"
  echo "0 0 300" > "$D/mode"
  [ "${ETCD_NETNS:-0}" = 1 ] && netns_setup
  local n M used="" port urls=""
  for n in $members; do
    M=$(member_dir "$n"); mkdir -p "$M"
    local pair=()
    if netns_mode; then pair=(2379 2380); fi   # a network stack of its own
    while [ ${#pair[@]} -lt 2 ]; do
      port=$(random_port)
      case " $used " in *" $port "*) continue ;; esac
      used="$used $port"; pair+=("$port")
    done
    echo "${pair[0]} ${pair[1]}" > "$M/ports"
    echo "http://$(member_host "$n"):${pair[0]}" > "$M/url"
    urls="$urls${urls:+,}http://$(member_host "$n"):${pair[0]}"
  done
  for n in $members; do launch_member "$n"; done
  for n in $members; do wait_member "$n"; done
  echo "$urls" > "$D/urls"
  if [ -n "${ETCD_OWNER_PID:-}" ]; then   # dead-man switch, as for start
    # shellcheck disable=SC2016  # expanded by the inner bash
    setsid bash -c 'alive() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st:0:1}" != Z ]; }; while alive "$1" && [ -d "$2" ]; do sleep 1; done; [ -d "$2" ] && exec "$3" cluster-stop "$2"' \
      _ "$ETCD_OWNER_PID" "$D" "$(readlink -f "$0")" </dev/null >/dev/null 2>&1 &
  fi
  echo "$urls"
}

member_signal() {
  local pid; pid=$(cat "$(member_dir "$1")/pid")
  kill "-$2" "$pid" 2>/dev/null || true
}

member_stop() {
  local pid; pid=$(cat "$(member_dir "$1")/pid" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  kill -CONT "$pid" 2>/dev/null || true   # a paused member cannot act on SIGTERM
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do alive "$pid" || return 0; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do alive "$pid" || return 0; sleep 0.05; done
}

member_kill() {
  local pid; pid=$(cat "$(member_dir "$1")/pid")
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do alive "$pid" || return 0; sleep 0.05; done
  die "member $1 (pid $pid) survived SIGKILL"
}

# The leader as the members see it: the member whose own status says it leads.
leader() {
  local n M st id lead
  for _ in $(seq 1 200); do
    for n in $members; do
      M=$(member_dir "$n")
      alive "$(cat "$M/pid")" || continue
      st=$(curl -sf --noproxy '*' --max-time 1 -X POST -d '{}' "$(cat "$M/url")/v3/maintenance/status" 2>/dev/null) || continue
      id=$(echo "$st" | sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p')
      lead=$(echo "$st" | sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p')
      if [ -n "$id" ] && [ "$id" = "$lead" ]; then echo "$n"; return 0; fi
    done
    sleep 0.05
  done
  die "no member says it leads after 10 s"
}

check_member() {
  case "${1:-}" in 1|2|3) ;; *) die "member number expected (1, 2 or 3), got '${1:-}'" ;; esac
  [ -f "$(member_dir "$1")/ports" ] || die "$D has no member $1 (run cluster-start first)"
}

cluster_stop() {
  [ -d "$D" ] || return 0
  local n
  for n in $members; do [ -f "$(member_dir "$n")/pid" ] && member_stop "$n"; done
  netns_teardown
  [ "${ETCD_KEEP:-0}" = 1 ] || rm -rf "$D"
}

case "$cmd" in
  cluster-start) cluster_start ;;
  cluster-stop) cluster_stop ;;
  member-kill) check_member "${3:-}"; member_kill "$3" ;;
  member-stop) check_member "${3:-}"; member_stop "$3" ;;
  member-start) check_member "${3:-}"; launch_member "$3"; wait_member "$3"; cat "$(member_dir "$3")/url" ;;
  member-pause) check_member "${3:-}"; member_signal "$3" STOP ;;
  member-resume) check_member "${3:-}"; member_signal "$3" CONT ;;
  member-isolate) check_member "${3:-}"; member_isolate "$3" ;;
  member-heal) check_member "${3:-}"; member_heal "$3" ;;
  leader) leader ;;
  start) start ;;
  stop) stop ;;
  pause) terminate ;;
  resume) resume ;;
  *) die "unknown command $cmd (start|stop|pause|resume|cluster-start|cluster-stop|member-kill|member-stop|member-start|member-pause|member-resume|member-isolate|member-heal|leader)" ;;
esac
