# shellcheck shell=sh
# `get_url`'s change, in the container with its own python3 (minimal containers have no
# curl): download URL to a temporary file next to DEST_PATH, check it against SUM (by
# ALGO) when given, and rename it over DEST_PATH only when its content differs; then
# MODE, OWNER and GROUP. Prints changed, checksum_src/dest (sha1), size, status_code.
# inputs: URL DEST_PATH ALGO SUM TIMEOUT FETCH MODE OWNER GROUP
# uses: kv pykv
gu_before=$(stat -c '%a %U %G' -- "$DEST_PATH" 2>/dev/null || true)
if [ "$FETCH" = 1 ]; then
  if ! command -v python3 >/dev/null 2>&1; then
    echo "get_url: python3 is needed in the container to download" >&2; exit 1
  fi
  pf_py python3 "$URL" "$DEST_PATH" "$ALGO" "$SUM" "$TIMEOUT" <<'PY' || exit 1
import hashlib, os, sys, tempfile, time, urllib.error, urllib.request
url, dest, algo, want, timeout = sys.argv[1:6]
start = time.time()
fd, tmp = tempfile.mkstemp(prefix=".get_url.", dir=os.path.dirname(dest) or ".")
try:
    digest, sha1, size = hashlib.new(algo), hashlib.sha1(), 0
    with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=float(timeout)) as resp:
        status = getattr(resp, "status", None) or 200
        while chunk := resp.read(65536):
            out.write(chunk); digest.update(chunk); sha1.update(chunk); size += len(chunk)
    if want and digest.hexdigest() != want:
        sys.exit(f"The checksum for {dest} did not match {want}; it was {digest.hexdigest()}.")
    old = None
    if os.path.isfile(dest):
        with open(dest, "rb") as f:
            old = hashlib.sha1(f.read()).hexdigest()
    changed = old != sha1.hexdigest()
    if changed:
        mask = os.umask(0); os.umask(mask)
        keep = os.stat(dest).st_mode & 0o7777 if old is not None else 0o666 & ~mask
        os.chmod(tmp, keep)
        os.replace(tmp, dest)
    pf_kv("changed", int(changed)); pf_kv("checksum_src", sha1.hexdigest())
    pf_kv("checksum_dest", sha1.hexdigest()); pf_kv("size", size); pf_kv("status_code", status)
    pf_kv("elapsed", int(time.time() - start))
except urllib.error.HTTPError as err:
    sys.exit(f"Request failed: HTTP Error {err.code}: {err.reason}")
except (OSError, ValueError) as err:
    sys.exit(f"Request failed: {err}")
finally:
    if os.path.exists(tmp):
        os.unlink(tmp)
PY
fi
if [ -n "$MODE" ]; then chmod -- "$MODE" "$DEST_PATH"; fi
if [ -n "$OWNER" ]; then chown -- "$OWNER" "$DEST_PATH"; fi
if [ -n "$GROUP" ]; then chgrp -- "$GROUP" "$DEST_PATH"; fi
gu_after=$(stat -c '%a %U %G' -- "$DEST_PATH")
pf_kv attrs "$gu_after"
if [ "$gu_before" != "$gu_after" ]; then pf_kv attrs_changed 1; fi
