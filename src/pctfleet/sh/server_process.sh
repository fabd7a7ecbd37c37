# shellcheck shell=sh
# What a server's PID file says: the PID as written, whether it lives (and carries
# PCTFLEET_SERVER=NAME), the launch spec beside it, the env file's hash (ENV_FILE given),
# and the health URL's status while it lives (READY_URL given).
# inputs: PIDFILE NAME ENV_FILE READY_URL
# uses: kv pidfile http
if [ -f "$PIDFILE" ]; then
  pf_kv pid "$(cat "$PIDFILE")"
  pid=$(pctfleet_live_pid "$PIDFILE")
  if [ -n "$pid" ]; then
    pf_kv alive 1
    tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null |
      grep -qx "PCTFLEET_SERVER=$NAME" && pf_kv ours 1
  fi
  if [ -f "$PIDFILE.spec" ]; then pf_kv spec "$(cat "$PIDFILE.spec")"; fi
fi
if [ -n "$ENV_FILE" ]; then
  if [ -f "$ENV_FILE" ]; then
    pf_kv envfile_sha "$(sha256sum < "$ENV_FILE" | cut -c1-16)"
  else
    pf_kv envfile_sha none
  fi
fi
if [ -n "$READY_URL" ] && [ -n "${pid:-}" ]; then pf_kv health "$(pctfleet_http "$READY_URL")"; fi
