# shellcheck shell=sh
# Which processes hold a TCP port, found by socket inode (/proc/net/tcp and tcp6, then the
# /proc/PID/fd links), never by a name. The first argument is the proc root: /proc, or a
# fake tree in tests.
# uses: pidfile
# pctfleet_proc_field ROOT PID N: field N of PID's stat counted after "(comm)" (1 state,
# 3 pgrp, 20 starttime): comm may hold spaces. pctfleet_proc_get sets pf_v to it instead.
pctfleet_proc_get() {
  pf_line='' pf_n=$3 pf_v=''
  IFS= read -r pf_line 2>/dev/null < "$1/$2/stat" || :
  # shellcheck disable=SC2086 # split on purpose: the kernel's numbers and state letter
  set -- ${pf_line##*) }
  eval "pf_v=\${$pf_n:-}"
}
pctfleet_proc_field() {
  pctfleet_proc_get "$@"
  echo "$pf_v"
}
# pctfleet_port_pids ROOT PORT: each PID with a listening socket on PORT, once.
pctfleet_port_pids() {
  cat "$1/net/tcp" "$1/net/tcp6" 2>/dev/null |
    awk -v port="$2" 'BEGIN { p = sprintf(":%04X", port) }
      $4 == "0A" && substr($2, length($2) - 4) == p && !seen[$10]++ { print $10 }' |
    while read -r pp_inode; do
      find "$1"/[0-9]*/fd -maxdepth 1 -lname "socket:\\[$pp_inode\\]" 2>/dev/null
    done | sed "s|^$1/||; s|/.*||" | sort -un
}
# pctfleet_proc_line ROOT PID WHY: "PID<TAB>STARTTIME<TAB>PGRP<TAB>WHY<TAB>COMMAND LINE".
pctfleet_proc_line() {
  pl_cmd=$(tr '\0\t\n' '   ' < "$1/$2/cmdline" 2>/dev/null | cut -c1-300)
  pctfleet_proc_get "$1" "$2" 20
  pl_start=$pf_v
  pctfleet_proc_get "$1" "$2" 3
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$pl_start" "$pf_v" "$3" "${pl_cmd% }"
}
# pctfleet_gpu_pids ROOT DEVDIR: "PID DEVICE[, DEVICE]" for each process with a descriptor
# open on /dev/nvidia* (its fd links, never its name); nothing when DEVDIR has no nvidia*.
pctfleet_gpu_pids() {
  for gp_dev in "$2"/nvidia*; do [ -e "$gp_dev" ] && break; done
  [ -e "$gp_dev" ] || return 0
  find "$1"/[0-9]*/fd -maxdepth 1 -lname '/dev/nvidia*' -printf '%p %l\n' 2>/dev/null |
    sed "s|^$1/||; s|/fd/[^ ]* | |" | sort -u |
    awk '{ if ($1 in d) d[$1] = d[$1] ", " $2; else d[$1] = $2 } END { for (p in d) print p, d[p] }' |
    sort -n
}
# pctfleet_holder_lines ROOT DEVDIR PORT PIDFILES: a pctfleet_proc_line per process that
# listens on PORT, lives by a PIDFILES line (newline-separated) or holds /dev/nvidia*.
pctfleet_holder_lines() {
  if [ -n "$3" ]; then
    pctfleet_port_pids "$1" "$3" | while read -r hl_pid; do
      pctfleet_proc_line "$1" "$hl_pid" "listening on port $3"
    done
  fi
  if [ -n "$4" ]; then
    printf '%s\n' "$4" | while read -r hl_file; do
      [ -n "$hl_file" ] || continue
      pctfleet_live_read "$hl_file"
      if [ -n "$lp_pid" ]; then pctfleet_proc_line "$1" "$lp_pid" "named by $hl_file"; fi
    done
  fi
  pctfleet_gpu_pids "$1" "$2" | while read -r hl_pid hl_devs; do
    pctfleet_proc_line "$1" "$hl_pid" "holds $hl_devs"
  done
}
