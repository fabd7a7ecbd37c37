# shellcheck shell=sh
# The PID a PID file names, when it is a number and that process is alive (not a zombie).
# Prints nothing otherwise. Never looks a process up by name.
pctfleet_live_pid() {  # pidfile
  [ -f "$1" ] || return 0
  lp_pid=$(head -c 32 "$1" 2>/dev/null | tr -d ' \n')
  case $lp_pid in '' | *[!0-9]*) return 0 ;; esac
  kill -0 "$lp_pid" 2>/dev/null || return 0
  [ "$(cut -d' ' -f3 "/proc/$lp_pid/stat" 2>/dev/null)" = Z ] && return 0
  echo "$lp_pid"
}
