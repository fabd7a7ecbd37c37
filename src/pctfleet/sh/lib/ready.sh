# shellcheck shell=sh
# Waiting for a launched server (srv_wait PID; a process group leader) to be ready; the SRV_ inputs
# of server_start.sh / server_unit.sh say what ready means. It fails at once, with the log
# tail, when the process dies or a SRV_FAIL_LOG line appears, and after SRV_TICKS tenths
# of a second. With SRV_PORT, ready also means the listener on the port is in our process
# group; a stranger there fails at once.
# uses: http listener
srv_ours() {  # 0: our group listens on SRV_PORT; 1: nobody yet; exit: a stranger does
  so_any=1
  for so_pid in $(pctfleet_port_pids /proc "$SRV_PORT"); do
    if [ "$(pctfleet_proc_field /proc "$so_pid" 3)" != "$srv_pid" ]; then
      srv_fail "port $SRV_PORT is held by pid $so_pid ($(tr '\0' ' ' < "/proc/$so_pid/cmdline" 2>/dev/null | sed 's/ $//')), not by the server launched (pid $srv_pid)"
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
srv_wait() {  # pid: prints pid=PID and exits 0 once ready; exits 1 through srv_fail
  srv_pid=$1
  set +e
  sw_i=0
  while :; do
    if ! kill -0 "$srv_pid" 2>/dev/null ||
      [ "$(cut -d' ' -f3 "/proc/$srv_pid/stat" 2>/dev/null)" = Z ]
    then srv_fail "server exited before it was ready"; fi
    if [ -n "$SRV_FAIL_CHECK" ] && grep -qF -- "$SRV_FAIL_LOG" "$SRV_LOG"; then
      srv_fail "server reported a failure"
    fi
    if srv_ready; then echo "pid=$srv_pid"; exit 0; fi
    sw_i=$((sw_i + 1))
    if [ "$sw_i" -gt "$SRV_TICKS" ]; then srv_fail "not ready after ${SRV_TIMEOUT}s"; fi
    sleep 0.1
  done
}
