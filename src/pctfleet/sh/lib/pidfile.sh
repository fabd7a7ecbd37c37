# shellcheck shell=sh
# pctfleet_pidfile_pid: the PID a PID file names, when it is a number.
# pctfleet_live_pid: the same, when that process is alive (not a zombie).
# Both print nothing otherwise. Never look a process up by name.
pctfleet_pidfile_pid() {  # pidfile
  [ -f "$1" ] || return 0
  lp_pid=$(head -c 32 "$1" 2>/dev/null | tr -d ' \n')
  case $lp_pid in '' | *[!0-9]*) return 0 ;; esac
  echo "$lp_pid"
}
pctfleet_live_pid() {  # pidfile
  lp_pid=$(pctfleet_pidfile_pid "$1")
  [ -n "$lp_pid" ] || return 0
  kill -0 "$lp_pid" 2>/dev/null || return 0
  [ "$(cut -d' ' -f3 "/proc/$lp_pid/stat" 2>/dev/null)" = Z ] && return 0
  echo "$lp_pid"
}
pctfleet_pid_marked() {  # pid name: its environment carries PCTFLEET_SERVER=NAME (ours)
  tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | grep -qxF "PCTFLEET_SERVER=$2"
}
pctfleet_pid_started() {  # pid: it carries a PCTFLEET_SERVER marker, whatever the server's name
  tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | grep -q '^PCTFLEET_SERVER='
}
