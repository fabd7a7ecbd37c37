# shellcheck shell=sh
# Never clear a cache under a running server: it would rebuild from a mix. The server is
# found by its PID file and stopped only when the process carries a PCTFLEET_SERVER=NAME
# marker (a PID reused by another process after a restart is left alone and named). A
# server that runs as pctfleet's systemd unit is stopped through systemd, so the unit does
# not take a KILL for a failure and start it again while the cache is being cleared.
# inputs: PIDFILE GRACE
# uses: stop pidfile unit
fc_pid=$(pctfleet_live_pid "$PIDFILE")
fc_name=
if [ -n "$fc_pid" ]; then
  fc_name=$(tr '\0' '\n' < "/proc/$fc_pid/environ" 2>/dev/null | sed -n 's/^PCTFLEET_SERVER=//p')
fi
if [ -n "$fc_pid" ] && [ -z "$fc_name" ]; then
  echo "pid $fc_pid from $PIDFILE was not started by pctfleet: not stopped" >&2
elif [ -n "$fc_name" ] && pctfleet_systemd && [ -f "$(pctfleet_unit_file "$fc_name")" ]; then
  systemctl stop "$(pctfleet_unit "$fc_name")"
  rm -f "$PIDFILE"
else
  pctfleet_stop "$PIDFILE" "$GRACE" ''
fi
