#!/bin/bash
# sdns.sh — a REAL systemd (the host's /lib/systemd/systemd) as PID 1 of a private PID, mount,
# cgroup and UTS namespace, driven from the host. mesh-host's systemd tests use it on machines
# whose PID 1 is not systemd (CI). Adapted from the workplace's shared systemd test harness.
#
#   sdns.sh start DIR        boot it; returns once SystemState is running or degraded (~0.4 s)
#   sdns.sh env DIR          print DBUS_SYSTEM_BUS_ADDRESS=... for sd-bus clients on the host, and
#                            MESH_HOST_JOURNAL_DIR=... (where its journald keeps the journal)
#   sdns.sh ctl DIR ARGS...  `systemctl ARGS` inside the namespace
#   sdns.sh exec DIR CMD...  any command inside the namespace (journalctl, busctl, sh ...)
#   sdns.sh pids DIR UNIT    host PIDs of UNIT's processes, one a line (from its cgroup)
#   sdns.sh stop DIR         graceful poweroff (SIGKILL after 10 s), remove its cgroup and DIR
#                            (SDNS_KEEP=1 keeps DIR for inspection)
# Env: SDNS_OWNER_PID=PID    at start: a dead-man switch stops the namespace when PID exits
#      SDNS_LOG_LEVEL=debug  systemd's log level (DIR/console.log)
#      SDNS_OVERLAY=1        at start: a machine dpkg can install into for real (package tests):
#                            /usr, /etc and /var are private overlays of the host's (writes land
#                            in DIR/overlay, the host's stay untouched) and /usr/lib/systemd/system
#                            is DIR/base, so a packaged unit lands where this systemd loads it
# Needs root, util-linux (unshare, nsenter), bsdutils (script), systemd, dbus; a cgroup2 mount.
#
# DIR on the host                      inside the namespace
#   DIR/etc/                      ==   /etc/systemd/system  (mesh-host's --unit-dir is DIR/etc)
#   DIR/run/                      ==   /run                 (private)
#   DIR/run/dbus/system_bus_socket     dbus-daemon --system (socket-activated)
#   DIR/run/log/journal/               systemd-journald's runtime journal (never flushed to /var)
#   DIR/base/                          whitelisted vendor units (links into /lib/systemd/system)
#   DIR/console.log                    systemd's own log (/dev/console is a pty from script(1))
#   DIR/pid, DIR/cgroup                host PID of systemd; the namespace's host cgroup
#   DIR/overlay/{usr,etc,var}/         SDNS_OVERLAY=1: the upper layers of /usr, /etc, /var
#
# SAFETY: systemd booted with its normal unit search path on a shared rootfs runs
# systemd-tmpfiles-setup --remove, which WIPES THE HOST'S /tmp, and more (NOTES.md). Hence:
#   * SYSTEMD_UNIT_PATH = /etc/systemd/system:/run/systemd/system:DIR/base; /lib/systemd/system
#     is not in it, so none of its *.wants/ apply (no tmpfiles, udev, sysctl, getty ...);
#   * /etc/systemd/system and /run are bind mounts from DIR; /dev is a private tmpfs;
#   * container=mesh-test: no kmod loading, and no umount/swapoff/detach at shutdown.
#   * SDNS_OVERLAY=1 keeps that: /usr/lib/systemd/system (in the unit path then) is DIR/base,
#     the whitelisted units copied, nothing else; /tmp is still the host's.
set -euo pipefail

die() { echo "sdns: $*" >&2; exit 1; }
cmd=${1:-}; D=${2:-}
if [ -z "$cmd" ] || [ -z "$D" ]; then die "usage: $0 start|env|ctl|exec|pids|stop DIR [args]"; fi
shift 2

need_tools() {
  local t
  [ "$(id -u)" = 0 ] || die "needs root (it creates namespaces, mounts and cgroups)"
  for t in unshare nsenter script busctl setsid; do
    command -v "$t" >/dev/null || die "$t is missing: run scripts/install-deps"
  done
  [ -x /lib/systemd/systemd ] || die "/lib/systemd/systemd is missing: run scripts/install-deps"
}

v2root() {   # the host's cgroup2 mount: hybrid -> /sys/fs/cgroup/unified, unified -> /sys/fs/cgroup
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then echo /sys/fs/cgroup
  elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then echo /sys/fs/cgroup/unified
  else die "no cgroup2 hierarchy on the host"; fi
}

write_base() {
  local B=$D/base L=/lib/systemd/system u
  # Links into the vendor directory; copies when base is mounted over it (SDNS_OVERLAY).
  local put=(ln -s)
  [ -z "${SDNS_OVERLAY:-}" ] || put=(cp)
  mkdir -p "$B/sockets.target.wants"
  for u in sysinit.target basic.target sockets.target timers.target paths.target slices.target \
           local-fs.target swap.target network.target network-online.target multi-user.target \
           shutdown.target umount.target final.target \
           poweroff.target systemd-poweroff.service halt.target systemd-halt.service \
           exit.target systemd-exit.service \
           dbus.socket dbus.service systemd-journald.socket systemd-journald.service; do
    [ -e "$L/$u" ] || die "missing vendor unit $L/$u"
    "${put[@]}" "$L/$u" "$B/$u"
  done
  ln -s multi-user.target "$B/default.target"
  ln -s ../dbus.socket "$B/sockets.target.wants/dbus.socket"
  ln -s ../systemd-journald.socket "$B/sockets.target.wants/systemd-journald.socket"
}

write_scripts() {
  # SDNS_OVERLAY: mounted by inner.sh before anything else, so the binds below land on top.
  # shellcheck disable=SC2016  # $D expanded by inner.sh (its own D)
  local overlay="" unit_path='/etc/systemd/system:/run/systemd/system:$D/base'
  if [ -n "${SDNS_OVERLAY:-}" ]; then
    local t
    for t in usr etc var; do
      mkdir -p "$D/overlay/$t/upper" "$D/overlay/$t/work"
      overlay+="mount -t overlay -o lowerdir=/$t,upperdir=$D/overlay/$t/upper,workdir=$D/overlay/$t/work overlay /$t"$'\n'
    done
    overlay+="mount --bind $D/base /usr/lib/systemd/system"$'\n'
    unit_path='/etc/systemd/system:/run/systemd/system:/usr/lib/systemd/system'
  fi
  # launch.sh runs under script(1), so its terminal is a pty that becomes systemd's
  # /dev/console; it moves itself into the payload cgroup, then creates the namespaces.
  cat > "$D/launch.sh" <<EOS
echo \$\$ > '$CG/payload/cgroup.procs'
exec unshare --pid --mount --cgroup --uts --kill-child=SIGKILL -- /bin/bash '$D/inner.sh'
EOS
  # inner.sh is PID 1 of the new PID namespace: it sets up the mounts and execs systemd.
  cat > "$D/inner.sh" <<EOS
set -eu
D='$D'
# the host PID, read with the read builtin (a forked awk would report its own)
while read -r k v _; do if [ "\$k" = NSpid: ]; then echo "\$v" > "\$D/pid"; fi; done < /proc/self/status
CONSOLE=\$(tty)
mount --make-rprivate /
$overlay
mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t tmpfs -o mode=755,nosuid,size=4m tmpfs "\$D/dev"
for n in null zero full random urandom tty; do : > "\$D/dev/\$n"; mount --bind "/dev/\$n" "\$D/dev/\$n"; done
: > "\$D/dev/console"; mount --bind "\$CONSOLE" "\$D/dev/console"
mkdir "\$D/dev/pts" "\$D/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "\$D/dev/pts"
ln -s pts/ptmx "\$D/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "\$D/dev/shm"
ln -s /proc/self/fd "\$D/dev/fd"; ln -s fd/0 "\$D/dev/stdin"; ln -s fd/1 "\$D/dev/stdout"; ln -s fd/2 "\$D/dev/stderr"
mount --move "\$D/dev" /dev
mount --bind "\$D/run" /run
mount --bind "\$D/etc" /etc/systemd/system
umount -l /sys/fs/cgroup
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup   # rooted at our cgroup namespace
exec env -i container=mesh-test TERM=vt220 LANG=C.UTF-8 \\
     SYSTEMD_UNIT_PATH="$unit_path" \\
     PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
     /lib/systemd/systemd --log-level=\${SDNS_LOG_LEVEL:-info} --show-status=no
EOS
}

# alive PID: exists and is not a zombie. This host's PID 1 reaps orphans late and kill -0
# succeeds on zombies, so waiting on kill -0 would cost seconds per teardown.
alive() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st:0:1}" != Z ]; }
nspid() { local p; p=$(cat "$D/pid" 2>/dev/null) || return 1; [ -n "$p" ] && alive "$p" && echo "$p"; }
busaddr() { echo "unix:path=$D/run/dbus/system_bus_socket"; }

case "$cmd" in
start)
  need_tools
  [ ! -e "$D" ] || [ -z "$(ls -A "$D")" ] || die "$D exists and is not empty"
  mkdir -p "$D"/{etc,run,dev}; D=$(cd "$D" && pwd)
  write_base
  V2=$(v2root); CG=$V2/mesh-test.$(basename "$D").$$
  mkdir -p "$CG/payload"; echo "$CG" > "$D/cgroup"
  write_scripts
  # shellcheck disable=SC2016  # expanded by the inner bash
  setsid bash -c 'echo $$ > "$1/cgroup.procs"; exec script -qfec "/bin/bash $2/launch.sh" "$2/console.log"' \
     _ "$CG" "$D" </dev/null >/dev/null 2>&1 &
  echo $! > "$D/script.pid"
  if [ -n "${SDNS_OWNER_PID:-}" ]; then   # dead-man switch: the owner died without calling stop
    # shellcheck disable=SC2016  # expanded by the inner bash
    setsid bash -c 'alive() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st:0:1}" != Z ]; }; while alive "$1" && [ -d "$2" ]; do sleep 1; done; [ -d "$2" ] && exec "$3" stop "$2"' \
      _ "$SDNS_OWNER_PID" "$D" "$(readlink -f "$0")" </dev/null >/dev/null 2>&1 &
  fi
  for _ in $(seq 1 400); do     # up to 20 s
    p=$(nspid || true)
    if [ -n "$p" ] && [ -S "$D/run/dbus/system_bus_socket" ]; then
      st=$(busctl --address="$(busaddr)" get-property org.freedesktop.systemd1 /org/freedesktop/systemd1 \
             org.freedesktop.systemd1.Manager SystemState 2>/dev/null || true)
      case "$st" in *'"running"'*|*'"degraded"'*) exit 0 ;; esac
    fi
    alive "$(cat "$D/script.pid")" || die "namespace died; console.log: $(tail -c 2000 "$D/console.log")"
    sleep 0.05
  done
  die "timeout waiting for systemd; console.log: $(tail -c 2000 "$D/console.log")"
  ;;
env)  echo "DBUS_SYSTEM_BUS_ADDRESS=$(busaddr)"; echo "MESH_HOST_JOURNAL_DIR=$D/run/log/journal" ;;
ctl)  p=$(nspid) || die "not running"; exec nsenter -t "$p" -m -p -- systemctl "$@" ;;
exec) p=$(nspid) || die "not running"; exec nsenter -t "$p" -m -p -u -- "$@" ;;
pids)
  unit=${1:-}; [ -n "$unit" ] || die "usage: $0 pids DIR UNIT"
  CG=$(cat "$D/cgroup") || die "not started"
  f=$CG/payload/system.slice/$unit/cgroup.procs
  [ ! -e "$f" ] || cat "$f"
  ;;
stop)
  [ -d "$D" ] || exit 0
  D=$(cd "$D" && pwd)
  if p=$(nspid); then
    nsenter -t "$p" -m -p -- systemctl --no-block poweroff >/dev/null 2>&1 || kill -s RTMIN+4 "$p" 2>/dev/null || true
    for _ in $(seq 1 500); do alive "$p" || break; sleep 0.02; done
    if alive "$p"; then echo "sdns: graceful poweroff timed out, SIGKILL" >&2; kill -KILL "$p" 2>/dev/null || true; fi
  fi
  sp=$(cat "$D/script.pid" 2>/dev/null || true)
  if [ -n "$sp" ]; then   # script(1), started above, exits with its child; if not, end it by PID
    for _ in $(seq 1 10); do alive "$sp" || break; sleep 0.02; done
    if alive "$sp"; then kill -KILL "$sp" 2>/dev/null || true; fi
    for _ in $(seq 1 100); do alive "$sp" || break; sleep 0.02; done
  fi
  CG=$(cat "$D/cgroup" 2>/dev/null || true)
  if [ -n "$CG" ] && [ -d "$CG" ]; then
    for _ in $(seq 1 50); do find "$CG" -depth -type d -exec rmdir {} \; 2>/dev/null || true; [ -d "$CG" ] || break; sleep 0.1; done
    [ ! -d "$CG" ] || echo "sdns: warning: could not remove $CG: $(cat "$CG"/cgroup.procs)" >&2
  fi
  [ -n "${SDNS_KEEP:-}" ] || rm -rf "$D"
  ;;
*) die "unknown command $cmd" ;;
esac
