# shellcheck shell=sh
# Launch a server detached (setsid, its own log, a PID file and the spec it was launched
# with), then wait until every given readiness check holds. It fails at once, with the log
# tail, when the process dies or a FAIL_LOG line appears (FAIL_CHECK non-empty), and after
# TICKS tenths of a second. Inputs are SRV_ names: the env file is sourced into this shell.
# SRV_STALE: "PID STARTTIME" lines of processes we did not start that hold the port: each
# is stopped first while it is still that process. With SRV_PORT, ready also means the
# listener on the port is in our launch's process group; a stranger there fails at once.
# A PID file whose process lacks PCTFLEET_SERVER=SRV_NAME is not ours: it is forgotten, never
# stopped as ours (the probe reported it; SRV_STALE carries it when it is to be stopped).
# "$@": NAME=value words for the server's environment, then `setsid` and its command line.
# inputs: SRV_NAME SRV_PIDFILE SRV_LOG SRV_GRACE SRV_WORKDIR SRV_ENV_FILE SRV_SPEC SRV_URL SRV_STATUS SRV_TCP_ADDRESS SRV_TCP_PORT SRV_READY_LOG SRV_FAIL_CHECK SRV_FAIL_LOG SRV_TIMEOUT SRV_TICKS SRV_PORT SRV_STALE
# uses: stop http envfile listener pidfile
srv_ours() {  # 0: our group listens on SRV_PORT; 1: nobody yet; exit: a stranger does
  so_any=1
  for so_pid in $(pctfleet_port_pids /proc "$SRV_PORT"); do
    if [ "$(pctfleet_proc_field /proc "$so_pid" 3)" != "$pid" ]; then
      srv_fail "port $SRV_PORT is held by pid $so_pid ($(tr '\0' ' ' < "/proc/$so_pid/cmdline" 2>/dev/null | sed 's/ $//')), not by the server launched (pid $pid)"
    fi
    so_any=0
  done
  return "$so_any"
}
srv_ready() {
  if [ -n "$SRV_PORT" ] && ! srv_ours; then return 1; fi
  if [ -n "$SRV_URL" ] && [ "$(pctfleet_http "$SRV_URL")" != "$SRV_STATUS" ]; then return 1; fi
  if [ -n "$SRV_TCP_PORT" ] && ! pctfleet_port "$SRV_TCP_ADDRESS" "$SRV_TCP_PORT"; then return 1; fi
  if [ -n "$SRV_READY_LOG" ] && ! grep -qF -- "$SRV_READY_LOG" "$SRV_LOG"; then return 1; fi
  return 0
}
srv_fail() {  # message
  echo "$1; log tail:" >&2
  tail -n 40 "$SRV_LOG" >&2
  exit 1
}
set -e
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
if [ -n "$SRV_WORKDIR" ]; then cd "$SRV_WORKDIR"; fi
if [ -n "$SRV_ENV_FILE" ]; then pctfleet_source_env "$SRV_ENV_FILE"; fi
env "$@" </dev/null >"$SRV_LOG" 2>&1 &
pid=$!
echo "$pid" > "$SRV_PIDFILE.tmp" && mv -f "$SRV_PIDFILE.tmp" "$SRV_PIDFILE"
envsha=none
if [ -n "$SRV_ENV_FILE" ] && [ -f "$SRV_ENV_FILE" ]; then
  envsha=$(sha256sum < "$SRV_ENV_FILE" | cut -c1-16)
fi
echo "$SRV_SPEC-$envsha" > "$SRV_PIDFILE.spec"
set +e
i=0
while :; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" = Z ]
  then srv_fail "server exited before it was ready"; fi
  if [ -n "$SRV_FAIL_CHECK" ] && grep -qF -- "$SRV_FAIL_LOG" "$SRV_LOG"; then
    srv_fail "server reported a failure"
  fi
  if srv_ready; then echo "pid=$pid"; exit 0; fi
  i=$((i + 1))
  if [ "$i" -gt "$SRV_TICKS" ]; then srv_fail "not ready after ${SRV_TIMEOUT}s"; fi
  sleep 0.1
done
