# shellcheck shell=sh
# `unarchive`'s change: extract ARCHIVE (tar, tar.gz, zip) into DEST, tar with the task's
# extra options ("$@"), zip with python3 (minimal containers have no unzip); then set
# OWNER, GROUP and MODE on every member; remove ARCHIVE when it was pushed (CLEANUP=1).
# inputs: ARCHIVE DEST KIND OWNER GROUP MODE CLEANUP
# uses: kv pykv
set -e
ua_list=$(mktemp)
trap 'rm -f "$ua_list"; if [ "$CLEANUP" = 1 ]; then rm -f "$ARCHIVE"; fi' EXIT
if [ "$KIND" = zip ]; then
  pf_py python3 "$ARCHIVE" "$DEST" <<'PY' > "$ua_list"
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        bits = (info.external_attr >> 16) & 0o7777
        if bits:
            os.chmod(path, bits)
        print(info.filename.rstrip("/"))
PY
  pf_kv handler ZipArchive
else
  tar -x -f "$ARCHIVE" -C "$DEST" "$@"
  tar -t -f "$ARCHIVE" > "$ua_list"
  pf_kv handler TgzArchive
fi
while IFS= read -r ua_name; do
  ua_path=$DEST/$ua_name
  if [ -n "$OWNER" ]; then chown -h -- "$OWNER" "$ua_path"; fi
  if [ -n "$GROUP" ]; then chgrp -h -- "$GROUP" "$ua_path"; fi
  if [ -n "$MODE" ] && [ ! -L "$ua_path" ]; then chmod -- "$MODE" "$ua_path"; fi
done < "$ua_list"
pf_kv members "$(wc -l < "$ua_list")"
