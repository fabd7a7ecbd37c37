# shellcheck shell=sh
# `uri`'s request, in the container with its own python3 (minimal containers have no curl):
# METHOD to URL with HEADERS (JSON) and the body on stdin, within TIMEOUT seconds. Prints
# status, url, content_type, headers (JSON), elapsed, content (base64) and, with DEST, the
# body written there atomically (changed=1 when it differed). An HTTP error is a status.
# inputs: URL METHOD HEADERS TIMEOUT DEST FOLLOW
# uses: pykv
if ! command -v python3 >/dev/null 2>&1; then
  echo "uri: python3 is needed in the container to send requests" >&2; exit 1
fi
# pf_py feeds the program on python's stdin: the body waits in a file.
ur_body=$(mktemp)
trap 'rm -f "$ur_body"' EXIT
cat > "$ur_body"
pf_py python3 "$URL" "$METHOD" "$HEADERS" "$TIMEOUT" "$DEST" "$FOLLOW" "$ur_body" <<'PY'
import base64, json, os, sys, tempfile, time, urllib.error, urllib.request
url, method, headers, timeout, dest, follow, body_file = sys.argv[1:8]
with open(body_file, "rb") as sent:
    body = sent.read()
start = time.time()

class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None

handlers = [] if follow == "1" else [Stay()]
request = urllib.request.Request(url, data=body or None, method=method, headers=json.loads(headers))
try:
    resp = urllib.request.build_opener(*handlers).open(request, timeout=float(timeout))
except urllib.error.HTTPError as err:
    resp = err
except (OSError, ValueError) as err:
    pf_kv("status", -1); pf_kv("error", f"Request failed: {err}"); sys.exit(0)
with resp:
    data = resp.read()
    pf_kv("status", resp.status if hasattr(resp, "status") else resp.code)
    pf_kv("url", resp.geturl()); pf_kv("redirected", int(resp.geturl() != url))
    pf_kv("content_type", resp.headers.get("Content-Type", ""))
    pf_kv("headers", json.dumps(dict(resp.headers.items())))
pf_kv("elapsed", int(time.time() - start))
pf_kv("content", base64.b64encode(data).decode())
if dest:
    if os.path.isdir(dest):
        dest = os.path.join(dest, os.path.basename(url.split("?")[0].rstrip("/")) or "index.html")
    old = open(dest, "rb").read() if os.path.isfile(dest) else None
    if old != data:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest) or ".")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    pf_kv("path", dest); pf_kv("changed", int(old != data))
PY
