# shellcheck shell=sh
# What both launch modes do before starting a server (SRV_ inputs of server_start.sh and
# server_unit.sh): stop the one its PID file names (only when it carries our
# PCTFLEET_SERVER=SRV_NAME marker: an unmarked one is forgotten, never stopped as ours; the
# probe reported it and SRV_STALE carries it when it is to be stopped), stop each SRV_STALE process ("PID
# STARTTIME" lines: processes we did not start) while the PID still names that process,
# make the folders, and keep the previous log as LOG.1.
# uses: stop listener pidfile
srv_prepare() {
  st_pid=$(pctfleet_live_pid "$SRV_PIDFILE")
  if [ -n "$st_pid" ] && ! pctfleet_pid_marked "$st_pid" "$SRV_NAME"; then
    echo "pid $st_pid from $SRV_PIDFILE was not started by pctfleet: not stopped as ours" >&2
    rm -f "$SRV_PIDFILE" "$SRV_PIDFILE.spec"
  fi
  pctfleet_stop "$SRV_PIDFILE" "$SRV_GRACE" ''
  printf '%s\n' "$SRV_STALE" | while read -r st_pid st_start; do
    [ -n "$st_pid" ] || continue
    if [ "$(pctfleet_proc_field /proc "$st_pid" 20)" = "$st_start" ]; then
      pctfleet_stop_pid "$st_pid" "$SRV_GRACE"
      echo "stopped=$st_pid"
    fi
  done
  mkdir -p "$(dirname "$SRV_PIDFILE")" "$(dirname "$SRV_LOG")"
  if [ -f "$SRV_LOG" ]; then mv -f "$SRV_LOG" "$SRV_LOG.1"; fi
}
srv_record() {  # pid spec_file: the PID file, and the spec the server was launched with
  echo "$1" > "$SRV_PIDFILE.tmp" && mv -f "$SRV_PIDFILE.tmp" "$SRV_PIDFILE"
  sr_envsha=none
  if [ -n "$SRV_ENV_FILE" ] && [ -f "$SRV_ENV_FILE" ]; then
    sr_envsha=$(sha256sum < "$SRV_ENV_FILE" | cut -c1-16)
  fi
  echo "$SRV_SPEC-$sr_envsha" > "$2"
}
