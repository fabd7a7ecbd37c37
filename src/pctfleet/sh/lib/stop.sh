# shellcheck shell=sh
# Stop a server by its PID file and process group: TERM, grace, then KILL. Never by name.
pctfleet_stop() {  # pidfile grace expect
  pf=$1 grace=$2 expect=$3
  [ -f "$pf" ] || return 0
  pid=$(cat "$pf")
  case $pid in ''|*[!0-9]*) rm -f "$pf" "$pf.spec"; return 0 ;; esac
  if kill -0 "$pid" 2>/dev/null; then
    if [ -n "$expect" ] && ! tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$expect"; then
      echo "pid $pid from $pf is not '$expect': left alone" >&2; rm -f "$pf" "$pf.spec"; return 0
    fi
    kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    i=0
    while kill -0 "-$pid" 2>/dev/null && [ "$i" -lt $((grace * 10)) ]; do
      sleep 0.1; i=$((i + 1))
    done
    if kill -0 "-$pid" 2>/dev/null; then
      echo "process group $pid ignored TERM for ${grace}s: KILL" >&2
      kill -KILL "-$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pf" "$pf.spec"
}
