#!/usr/bin/env bash
# The last test of a ctest run (FIXTURES_CLEANUP, tests/leftovers/leftovers.cmake):
# fails when a process a test started is still alive, listing each with why it
# counts. Reports only: it kills nothing, so that nothing is hidden.
#
#   check.sh TAG [STAMP]
#
# A process counts when
#   - its environment holds MESH_HOST_TEST_RUN=TAG (tests/leftovers/processes.hh:
#     every test binary of this build tags what it starts), or
#   - it runs in a session such a process leads (a service of a builtin
#     supervisor: its environment comes from its unit, not from the supervisor), or
#   - it was started since STAMP (touched when this ctest run began) and still
#     holds a file or directory in a test directory that is gone
#     (/tmp/mesh-…/… (deleted)): orphaned when its supervisor was killed.
# Never this script, its ancestors (ctest, the shell that ran it) or a zombie.
# MESH_LEFTOVERS_GRACE (seconds, default 5): how long a process may take to exit.
set -u

tag=${1:?usage: check.sh TAG [STAMP]}
stamp=${2:-}
grace=${MESH_LEFTOVERS_GRACE:-5}

since=0
[ -n "$stamp" ] && [ -e "$stamp" ] && since=$(stat -c %Y "$stamp")
btime=$(awk '/^btime/ {print $2}' /proc/stat)
hz=$(getconf CLK_TCK)

declare -A ancestor
p=$$
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
  ancestor[$p]=1
  s=$(cat "/proc/$p/stat" 2>/dev/null) || break
  s=${s##*) }
  read -r _ p _ <<<"$s"
done

# Prints "pid<TAB>why" for every process that counts.
scan() {
  declare -A sid_of ppid_of start_of tagged
  local pid s f state ppid pgrp sid rest why q
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ -n "${ancestor[$pid]:-}" ] && continue
    s=$(cat "$d/stat" 2>/dev/null) || continue
    s=${s##*) }
    read -r state ppid pgrp sid rest <<<"$s"
    [ "$state" = Z ] && continue
    # Kernel threads have no command line (and /proc files show size 0: read it).
    [ -n "$(tr -d '\0' <"$d/cmdline" 2>/dev/null | head -c 1)" ] || continue
    read -r -a f <<<"$s"
    sid_of[$pid]=$sid
    ppid_of[$pid]=$ppid
    start_of[$pid]=$((btime + ${f[19]} / hz))
    grep -qzxF "MESH_HOST_TEST_RUN=$tag" "$d/environ" 2>/dev/null && tagged[$pid]=1
  done
  for pid in "${!sid_of[@]}"; do
    # This script's own subshells and commands, whatever their environment.
    q=$pid
    while [ -n "$q" ] && [ "$q" != 1 ] && [ "$q" != "$$" ]; do q=${ppid_of[$q]:-}; done
    [ "$q" = "$$" ] && continue
    why=
    sid=${sid_of[$pid]}
    if [ -n "${tagged[$pid]:-}" ]; then
      why="tagged MESH_HOST_TEST_RUN=$tag"
    elif [ -n "${tagged[$sid]:-}" ]; then
      why="in the session of tagged process $sid"
    elif [ "${start_of[$pid]}" -ge "$since" ]; then
      for l in "/proc/$pid/cwd" /proc/"$pid"/fd/*; do
        t=$(readlink "$l" 2>/dev/null) || continue
        case $t in
          /tmp/mesh-*" (deleted)")
            why="holds $t, in a test directory that is gone"
            break
            ;;
        esac
      done
    fi
    [ -n "$why" ] && printf '%s\t%s\n' "$pid" "$why"
  done
}

deadline=$((SECONDS + grace))
while :; do
  found=$(scan)
  [ -z "$found" ] && {
    echo "no process started by a test is left running"
    exit 0
  }
  [ "$SECONDS" -ge "$deadline" ] && break
  sleep 0.5
done

echo "processes started by tests are still running (a fixture did not stop what it started):"
pids=()
while IFS=$'\t' read -r pid why; do
  pids+=("$pid")
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
  printf '  pid %s (%s): %s\n' "$pid" "$why" "${cmd:-?}"
done <<<"$found"
echo "end them with: kill -9 ${pids[*]}"
exit 1
