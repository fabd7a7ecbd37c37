# shellcheck shell=sh
# What a server's PID file says: the PID as written, whether it lives (and carries
# PCTFLEET_SERVER=NAME: `ours`), the launch spec beside it, the env file's hash (ENV_FILE
# given), and the health URL's status while it lives (READY_URL given). `holderN`: one fact
# per process that holds PORT (listening on it), that a STALE_PIDFILES line names, that
# holds /dev/nvidia* open, or that our PID file names without our marker (a reused PID),
# as pctfleet_proc_line prints it; the module tells ours (its process group) from the rest.
# `init systemd` where systemd is PID 1. Where pctfleet wrote a unit for NAME, `unit` is
# its enablement, `unit_sha` the hash of the unit file and its launcher, and the PID and
# spec are the unit's (they outlast a restart; /run not).
# inputs: PIDFILE NAME ENV_FILE READY_URL PORT STALE_PIDFILES
# uses: kv pidfile http listener unit
# shellcheck disable=SC2154 # ft_text and lp_pid: set by lib/pidfile.sh, ph_status by lib/http.sh
sp_alive() {  # pid
  pf_kv alive 1
  if pctfleet_pid_marked "$1" "$NAME"; then pf_kv ours 1; sp_ours=1; fi
}
sp_sha16() {  # text: sp_sha = its first 16 characters (a sha256sum line's hash, cut)
  sp_sha=${1%"${1#????????????????}"}
}
pid='' sp_ours='' sp_systemd=''
if pctfleet_systemd; then pf_kv init systemd; sp_systemd=1; fi
if [ -n "$NAME" ] && [ -n "$sp_systemd" ] && [ -f "$(pctfleet_unit_file "$NAME")" ]; then
  sp_unit=$(pctfleet_unit "$NAME")
  pf_kv unit "$(systemctl is-enabled "$sp_unit" 2>/dev/null || :)"
  sp_files="$(pctfleet_unit_file "$NAME") $(pctfleet_unit_launcher "$NAME")"
  # shellcheck disable=SC2086 # two paths without spaces
  sp_sha16 "$(cat $sp_files 2>/dev/null | sha256sum)"
  pf_kv unit_sha "$sp_sha"
  pid=$(systemctl show -p MainPID --value "$sp_unit" 2>/dev/null)
  case $pid in '' | 0 | *[!0-9]*) pid= ;; *) pf_kv pid "$pid"; sp_alive "$pid" ;; esac
  sp_spec=$(pctfleet_unit_spec "$NAME")
  if [ -f "$sp_spec" ]; then pctfleet_file_read "$sp_spec"; pf_kv spec "$ft_text"; fi
elif [ -f "$PIDFILE" ]; then
  pctfleet_file_read "$PIDFILE"
  pf_kv pid "$ft_text"
  pctfleet_live_read "$PIDFILE"
  pid=$lp_pid
  if [ -n "$pid" ]; then sp_alive "$pid"; fi
  if [ -f "$PIDFILE.spec" ]; then pctfleet_file_read "$PIDFILE.spec"; pf_kv spec "$ft_text"; fi
fi
if [ -n "$ENV_FILE" ]; then
  if [ -f "$ENV_FILE" ]; then
    sp_sha16 "$(sha256sum < "$ENV_FILE")"
    pf_kv envfile_sha "$sp_sha"
  else
    pf_kv envfile_sha none
  fi
fi
if [ -n "$READY_URL" ] && [ -n "$pid" ]; then
  pctfleet_http_read "$READY_URL"
  pf_kv health "$ph_status"
fi
sp_holders=''
# No port, no PID files, no GPU and no foreign PID: nothing to look for, no subshell started.
if [ -n "$PORT" ] || [ -n "$STALE_PIDFILES" ] || pctfleet_gpu_devices /dev ||
  { [ -n "$NAME" ] && [ -n "$pid" ] && [ -z "$sp_ours" ]; }; then
  sp_holders=$(
    pctfleet_holder_lines /proc /dev "$PORT" "$STALE_PIDFILES"
    if [ -n "$NAME" ] && [ -n "$pid" ] && [ -z "$sp_ours" ]; then  # sp_alive looked
      pctfleet_proc_line /proc "$pid" "named by $PIDFILE, not started by pctfleet"
    fi
  )
fi
sp_n=0
while IFS= read -r sp_line; do
  [ -n "$sp_line" ] || continue
  sp_n=$((sp_n + 1)); pf_kv "holder$sp_n" "$sp_line"
done <<PCTFLEET_HOLDERS
$sp_holders
PCTFLEET_HOLDERS
