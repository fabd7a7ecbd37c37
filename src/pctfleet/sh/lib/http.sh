# shellcheck shell=sh
# HTTP from inside the container, to a server in it: never through a proxy the
# environment names (http_proxy and friends would send 127.0.0.1 elsewhere).
# pctfleet_http_get URL TIMEOUT [PYTHON]: the status (0 when no answer) on one line, then
# the body's first 200 characters (or why there was no answer) on one line.
pctfleet_http_get() {
  "${3:-python3}" - "$1" "$2" <<'PCTFLEET_PY' 2>/dev/null || echo 0
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    reply = opener.open(sys.argv[1], timeout=float(sys.argv[2]))
    status, body = reply.status, reply.read(200)
except urllib.error.HTTPError as exc:
    status, body = exc.code, exc.read(200)
except Exception as exc:
    status, body = 0, (str(exc) or type(exc).__name__).encode()
print(status)
print(body.decode("utf-8", "replace").replace("\n", " ")[:200])
PCTFLEET_PY
}
pctfleet_http() {  # url: the status only
  pctfleet_http_read "$1"
  echo "$ph_status"
}
pctfleet_http_read() {  # url: ph_status = what pctfleet_http prints
  pctfleet_http_code "$1"
  case $ph_status in
    '' | 3??) ph_status=$(pctfleet_http_get "$1" 3 | head -n 1) ;; # no bash, or a redirect
  esac
}
# pctfleet_http_code URL: ph_status = the status line's code of a plain http:// GET, read
# with bash's /dev/tcp: a probe's health check then starts no Python (dash has no /dev/tcp,
# containers may lack curl). '' where bash is missing or the URL is not plain http to a
# host:port; `0` when nothing answers within 3 s. The connect and the exchange run in a
# process substitution that bash waits for with `read -t 3` (a listener whose accept queue
# is full holds a connect for minutes), killed when the time is up: no `timeout` process.
pctfleet_http_code() {
  ph_status=''
  command -v bash >/dev/null 2>&1 || return 0
  case $1 in http://\[*) return 0 ;; http://*) ;; *) return 0 ;; esac
  # shellcheck disable=SC2016 # expanded by the bash it runs in
  ph_status=$(bash -c '
    get() {
      rest=${1%%#*} && rest=${rest#http://} && hostport=${rest%%[/?]*} && path=${rest#"$hostport"}
      case $path in /*) ;; *) path=/$path ;; esac
      host=${hostport%:*} && port=${hostport##*:} && [ "$host" != "$hostport" ] || port=80
      exec 3<>"/dev/tcp/$host/$port" || exit 1
      printf "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n" "$path" "$hostport" >&3
      read -r proto code rest <&3 && case $proto$code in HTTP/*[0-9][0-9][0-9]) ;; *) exit 1 ;; esac
      echo "${code}"
    }
    read -r -t 3 code < <(get "$1")
    rc=$?
    if [ "$rc" -eq 0 ]; then echo "$code"; exit 0; fi
    if [ "$rc" -gt 128 ]; then kill "$!"; fi  # timed out: still connecting or reading
    echo 0' pctfleet_http "$1" 2>/dev/null)
  [ -n "$ph_status" ] || ph_status=0
}
pctfleet_port() {
  python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)' \
    "$1" "$2" 2>/dev/null
}
