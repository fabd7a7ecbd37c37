# shellcheck shell=sh
# `holderN`, as pctfleet_proc_line prints it, for each process that listens on PORT or
# holds /dev/nvidia* and that pctfleet did not start: no PCTFLEET_SERVER marker in its
# environment. Any server task's marker counts (its name is the playbook's choice), and
# the server's workers inherit it from the process pctfleet launched.
# inputs: PORT
# uses: kv listener pidfile
sp_n=0
pctfleet_holder_lines /proc /dev "$PORT" "" | while IFS= read -r sp_line; do
  [ -n "$sp_line" ] || continue
  if pctfleet_pid_started "${sp_line%%	*}"; then continue; fi  # its first field
  sp_n=$((sp_n + 1)); pf_kv "holder$sp_n" "$sp_line"
done
