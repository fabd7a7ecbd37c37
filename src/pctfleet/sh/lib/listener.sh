# shellcheck shell=sh
# Which processes hold a TCP port, found by socket inode (/proc/net/tcp and tcp6, then the
# /proc/PID/fd links), never by a name. The first argument is the proc root: /proc, or a
# fake tree in tests.
# pctfleet_proc_field ROOT PID N: field N of PID's stat counted after "(comm)" (1 state,
# 3 pgrp, 20 starttime): comm may hold spaces.
pctfleet_proc_field() {
  sed 's/.*) //' "$1/$2/stat" 2>/dev/null | cut -d' ' -f"$3"
}
# pctfleet_port_pids ROOT PORT: each PID with a listening socket on PORT, once.
pctfleet_port_pids() {
  pp_hex=$(printf '%04X' "$2")
  cat "$1/net/tcp" "$1/net/tcp6" 2>/dev/null |
    awk -v p=":$pp_hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' |
    sort -u | while read -r pp_inode; do
      find "$1"/[0-9]*/fd -maxdepth 1 -lname "socket:\\[$pp_inode\\]" 2>/dev/null
    done | sed "s|^$1/||; s|/.*||" | sort -un
}
# pctfleet_proc_line ROOT PID WHY: "PID<TAB>STARTTIME<TAB>PGRP<TAB>WHY<TAB>COMMAND LINE".
pctfleet_proc_line() {
  pl_cmd=$(tr '\0\t\n' '   ' < "$1/$2/cmdline" 2>/dev/null | cut -c1-300)
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$(pctfleet_proc_field "$1" "$2" 20)" \
    "$(pctfleet_proc_field "$1" "$2" 3)" "$3" "${pl_cmd% }"
}
