# shellcheck shell=sh
# verify: the server's PID file and process, what its env file says, who listens on its
# port, and its health URL. /proc only: a minbase container has no ss, netstat or curl.
# inputs: PF ENVFILE PORT URL VENV
# uses: kv pidfile envfile http
# "$@": the names whose env-file values the server's environment must match.
if [ -f "$PF" ]; then
  pf_kv pid "$(cat "$PF")"
  pid=$(pctfleet_pidfile_pid "$PF")
  if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
    pf_kv state "$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f1)"
    pf_kv cmdline "$(base64 -w0 < "/proc/$pid/cmdline")"
    pf_kv environ "$(base64 -w0 < "/proc/$pid/environ")"
  fi
fi
pctfleet_env_values "$ENVFILE" "$@"
hex=$(printf '%04X' "$PORT")
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] || continue
  while read -r _sl local _rem st _q _t _r _u _o inode _rest; do
    [ "$st" = 0A ] || continue
    case $local in *:"$hex") ;; *) continue ;; esac
    owner=$(find /proc/[0-9]*/fd -maxdepth 1 -lname "socket:\[$inode\]" 2>/dev/null |
      head -n 1 | cut -d/ -f3)
    sid=
    [ -n "$owner" ] && sid=$(sed 's/.*) //' "/proc/$owner/stat" | cut -d' ' -f4)
    pf_kv listen "$local $owner $sid"
  done < "$f"
done
pctfleet_http_get "$URL" 5 "$(command -v python3 || echo "$VENV/bin/python")" | {
  read -r health
  IFS= read -r body
  pf_kv health "$health"
  pf_kv health_body "$body"
}
