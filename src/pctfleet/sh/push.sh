# shellcheck shell=sh
# Receive a file on stdin into a temp file beside DEST, check its size and sha256,
# then rename it over DEST: a reader sees the old file or the new one, never half.
# VALIDATE ('' = none) is sh code that checks the new file at "$tmp" first: when it
# fails, DEST is left as it was (exit 98, its status on the last stderr line).
# argv: DEST MODE OWNER SIZE SHA256 [VALIDATE]
set -eu
dest=$1 mode=$2 owner=$3 size=$4 sum=$5 validate=${6:-}
dir=$(dirname -- "$dest")
mkdir -p -- "$dir"
tmp=$(mktemp "$dir/.pctfleet-push.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp"
got_size=$(wc -c < "$tmp")
if [ "$got_size" -ne "$size" ]; then
  echo "size mismatch: sent $size bytes, $got_size arrived" >&2; exit 97
fi
got_sum=$(sha256sum < "$tmp"); got_sum=${got_sum%% *}
if [ "$got_sum" != "$sum" ]; then echo "sha256 mismatch: $got_sum" >&2; exit 97; fi
if [ -n "$owner" ]; then chown -- "$owner" "$tmp"; fi
chmod -- "$mode" "$tmp"
if [ -n "$validate" ]; then
  status=0
  eval "$validate" < /dev/null || status=$?
  if [ "$status" -ne 0 ]; then printf '\n\036pctfleet-validate %s\n' "$status" >&2; exit 98; fi
fi
mv -f -- "$tmp" "$dest"
trap - EXIT
