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
  pctfleet_http_get "$1" 3 | head -n 1
}
pctfleet_port() {
  python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)' \
    "$1" "$2" 2>/dev/null
}
