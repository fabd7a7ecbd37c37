# shellcheck shell=sh
# pctfleet_pidfile_pid: the PID a PID file names, when it is a number.
# pctfleet_live_pid: the same, when that process is alive (not a zombie).
# Both print nothing otherwise. Never look a process up by name.
# pctfleet_pidfile_read and pctfleet_live_read set lp_pid the same way, with no process
# started for a file of one line of digits (a probe reads several PID files).
pctfleet_pidfile_read() {  # pidfile
  lp_pid=
  [ -f "$1" ] || return 0
  if pctfleet_file_line "$1"; then
    case $ft_text in
      '' | *[!0123456789]*) ;;
      *) if [ ${#ft_text} -le 32 ]; then lp_pid=$ft_text; return 0; fi ;;
    esac
  fi
  # Anything else as it always was read: its first 32 bytes, spaces and newlines dropped.
  lp_pid=$(head -c 32 "$1" 2>/dev/null | tr -d ' \n')
  case $lp_pid in '' | *[!0-9]*) lp_pid= ;; esac
}
pctfleet_pidfile_pid() {  # pidfile
  pctfleet_pidfile_read "$1"
  if [ -n "$lp_pid" ]; then echo "$lp_pid"; fi
}
pctfleet_live_read() {  # pidfile
  pctfleet_pidfile_read "$1"
  [ -n "$lp_pid" ] || return 0
  kill -0 "$lp_pid" 2>/dev/null || { lp_pid=; return 0; }
  lp_stat=
  IFS= read -r lp_stat 2>/dev/null < "/proc/$lp_pid/stat" || :
  lp_stat=${lp_stat##*) }  # the state follows "(comm) ", and comm may hold spaces
  if [ "${lp_stat%% *}" = Z ]; then lp_pid=; fi
}
pctfleet_live_pid() {  # pidfile
  pctfleet_live_read "$1"
  if [ -n "$lp_pid" ]; then echo "$lp_pid"; fi
}
# pctfleet_file_line FILE: true, with ft_text set to its line, when FILE is exactly one
# line ending in a newline (read by the shell itself); false otherwise.
pctfleet_file_line() {
  ft_text='' ft_more=''
  { IFS= read -r ft_text && ! IFS= read -r ft_more && [ -z "$ft_more" ]; } 2>/dev/null < "$1"
}
# pctfleet_file_read FILE: ft_text = FILE's text as $(cat FILE) gives it.
pctfleet_file_read() {
  pctfleet_file_line "$1" || ft_text=$(cat "$1" 2>/dev/null)
}
# pctfleet_environ_grep PID GREP-ARGS...: grep -q PID's environment, an entry a line.
pctfleet_environ_grep() {
  eg_file=/proc/$1/environ
  shift
  grep -qz "$@" "$eg_file" 2>/dev/null
  eg_rc=$?
  if [ "$eg_rc" -le 1 ]; then return "$eg_rc"; fi
  # A grep without -z (or a file gone): entries turned into lines by tr.
  tr '\0' '\n' < "$eg_file" 2>/dev/null | grep -q "$@"
}
pctfleet_pid_marked() {  # pid name: its environment carries PCTFLEET_SERVER=NAME (ours)
  pctfleet_environ_grep "$1" -xF "PCTFLEET_SERVER=$2"
}
pctfleet_pid_started() {  # pid: it carries a PCTFLEET_SERVER marker, whatever the server's name
  pctfleet_environ_grep "$1" '^PCTFLEET_SERVER='
}
