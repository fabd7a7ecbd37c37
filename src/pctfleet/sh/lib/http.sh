# shellcheck shell=sh
# HTTP status of a URL and whether a TCP port accepts, from inside the container.
pctfleet_http() {
  python3 - "$1" <<'PCTFLEET_PY' 2>/dev/null || echo 0
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=3).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
PCTFLEET_PY
}
pctfleet_port() {
  python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)' \
    "$1" "$2" 2>/dev/null
}
