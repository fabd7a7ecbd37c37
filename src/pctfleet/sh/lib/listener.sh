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
# pctfleet_port_pids ROOT PORT: each PID with a listening socket on PORT, once, in
# numeric order. One awk reads both tables (a missing one reads as empty) and one find
# looks for all the sockets' inodes at once; PIDs are read from the paths it prints.
pctfleet_port_pids() {
  pp_root=$1
  pp_inodes=$(awk -v port="$2" 'BEGIN {
      p = sprintf(":%04X", port)
      for (i = 1; i < ARGC; i++)
        while ((getline < ARGV[i]) > 0)
          if ($4 == "0A" && substr($2, length($2) - 4) == p && $10 ~ /^[0-9]+$/ && !seen[$10]++)
            print $10
    }' "$1/net/tcp" "$1/net/tcp6" 2>/dev/null)
  set --
  for pp_inode in $pp_inodes; do set -- "$@" -o -lname "socket:\\[$pp_inode\\]"; done
  [ $# -gt 0 ] || return 0
  shift  # the first -o
  { cd "$pp_root" && find [0-9]*/fd -maxdepth 1 "$@" 2>/dev/null; } | pctfleet_first_field_sorted
}
# PID/... lines on stdin: each PID (the part before the first /) once, in numeric order.
pctfleet_first_field_sorted() {
  awk -F/ '!($1 in seen) { seen[$1]; pid[++n] = $1 } END { pctfleet_sort_print(pid, n) }
    '"$PCTFLEET_AWK_SORT"
}
# An awk function: print a[1..n], numbers, in ascending order (a few PIDs: insertion sort).
PCTFLEET_AWK_SORT='function pctfleet_sort_print(a, n,  i, j, v) {
  for (i = 2; i <= n; i++) {
    v = a[i]
    for (j = i - 1; j > 0 && a[j] + 0 > v + 0; j--) a[j + 1] = a[j]
    a[j + 1] = v
  }
  for (i = 1; i <= n; i++) print a[i]
}'
# pctfleet_proc_line ROOT PID WHY: "PID<TAB>STARTTIME<TAB>PGRP<TAB>WHY<TAB>COMMAND LINE",
# the command line's NULs, tabs and newlines as spaces and cut to its first 300 bytes. A
# line of plain ASCII characters, 300 or fewer, is the same in bytes and characters in any
# locale: it is not piped through cut.
pctfleet_proc_line() {
  pl_cmd=$(tr '\0\t\n' '   ' < "$1/$2/cmdline" 2>/dev/null)
  case $pl_cmd in
    *[!\ ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/@+,:=-]*)
      pl_cmd=$(printf '%s' "$pl_cmd" | cut -c1-300) ;;
    *) [ ${#pl_cmd} -le 300 ] || pl_cmd=$(printf '%s' "$pl_cmd" | cut -c1-300) ;;
  esac
  pctfleet_proc_get "$1" "$2" 20
  pl_start=$pf_v
  pctfleet_proc_get "$1" "$2" 3
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$pl_start" "$pf_v" "$3" "${pl_cmd% }"
}
pctfleet_gpu_devices() {  # DEVDIR: true when it holds an nvidia* entry
  for gp_dev in "$1"/nvidia*; do [ -e "$gp_dev" ] && return 0; done
  return 1
}
# pctfleet_gpu_pids ROOT DEVDIR: "PID DEVICE[, DEVICE]" for each process with a descriptor
# open on /dev/nvidia* (its fd links, never its name); nothing when DEVDIR has no nvidia*.
# Each PID's devices in sort's order, the PIDs in numeric order.
pctfleet_gpu_pids() {
  pctfleet_gpu_devices "$2" || return 0
  { cd "$1" && find [0-9]*/fd -maxdepth 1 -lname '/dev/nvidia*' -printf '%h %l\n' 2>/dev/null; } |
    sort -u | awk '{ sub("/.*", "", $1) }
      !($1 in d) { pid[++n] = $1; d[$1] = $2; next }
      { d[$1] = d[$1] ", " $2 }
      END { for (i = 1; i <= n; i++) line[i] = pid[i] " " d[pid[i]]; pctfleet_sort_print(line, n) }
    '"$PCTFLEET_AWK_SORT"
}
# pctfleet_holder_lines ROOT DEVDIR PORT PIDFILES: a pctfleet_proc_line per process that
# listens on PORT, lives by a PIDFILES line (newline-separated) or holds /dev/nvidia*.
pctfleet_holder_lines() {
  if [ -n "$3" ]; then
    for hl_pid in $(pctfleet_port_pids "$1" "$3"); do
      pctfleet_proc_line "$1" "$hl_pid" "listening on port $3"
    done
  fi
  if [ -n "$4" ]; then
    while read -r hl_file; do
      [ -n "$hl_file" ] || continue
      pctfleet_live_read "$hl_file"
      if [ -n "$lp_pid" ]; then pctfleet_proc_line "$1" "$lp_pid" "named by $hl_file"; fi
    done <<PCTFLEET_PIDFILES
$4
PCTFLEET_PIDFILES
  fi
  if pctfleet_gpu_devices "$2"; then
    while read -r hl_pid hl_devs; do
      [ -n "$hl_pid" ] || continue
      pctfleet_proc_line "$1" "$hl_pid" "holds $hl_devs"
    done <<PCTFLEET_GPU
$(pctfleet_gpu_pids "$1" "$2")
PCTFLEET_GPU
  fi
}
