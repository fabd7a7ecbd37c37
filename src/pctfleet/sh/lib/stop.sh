# shellcheck shell=sh
# Stop a process by its PID, or a server by its PID file: TERM to the process group,
# grace, then KILL. Never by name.
# uses: listener
pctfleet_signal_target() {  # pid: "-PGRP" where the whole group is this launch's, else PID
  st_group=$(pctfleet_proc_field /proc "$1" 3)
  st_own=$(pctfleet_proc_field /proc "$$" 3)
  case $st_group in '' | *[!0-9]* | 0 | 1 | "$st_own") echo "$1"; return 0 ;; esac
  # The group of a leader, or an orphaned group (its leader gone: only this launch is left).
  if [ "$st_group" = "$1" ] || ! kill -0 "$st_group" 2>/dev/null; then
    echo "-$st_group"
  else
    echo "$1"
  fi
}
pctfleet_is_us() {  # pid: this script or one of its ancestors (a stale PID file's PID reused)
  iu_p=$$
  while [ -n "$iu_p" ] && [ "$iu_p" -gt 1 ] 2>/dev/null; do
    [ "$iu_p" = "$1" ] && return 0
    iu_p=$(pctfleet_proc_field /proc "$iu_p" 2)
  done
  return 1
}
pctfleet_stop_pid() {  # pid grace
  sp_pid=$1 sp_grace=$2
  if pctfleet_is_us "$sp_pid"; then
    echo "pid $sp_pid is this script or its parent (a reused PID): left alone" >&2
    return 0
  fi
  sp_to=$(pctfleet_signal_target "$sp_pid")
  kill -TERM "$sp_to" 2>/dev/null || kill -TERM "$sp_pid" 2>/dev/null || true
  sp_i=0
  while kill -0 "$sp_to" 2>/dev/null && [ "$sp_i" -lt $((sp_grace * 10)) ]; do
    sleep 0.1; sp_i=$((sp_i + 1))
  done
  if kill -0 "$sp_to" 2>/dev/null; then
    echo "process $sp_to ignored TERM for ${sp_grace}s: KILL" >&2
    kill -KILL "$sp_to" 2>/dev/null || true
  fi
}
pctfleet_stop() {  # pidfile grace expect
  pf=$1 grace=$2 expect=$3
  [ -f "$pf" ] || return 0
  pid=$(cat "$pf")
  case $pid in ''|*[!0-9]*) rm -f "$pf" "$pf.spec"; return 0 ;; esac
  if kill -0 "$pid" 2>/dev/null; then
    if [ -n "$expect" ] && ! tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$expect"; then
      echo "pid $pid from $pf is not '$expect': left alone" >&2; rm -f "$pf" "$pf.spec"; return 0
    fi
    pctfleet_stop_pid "$pid" "$grace"
  fi
  rm -f "$pf" "$pf.spec"
}
