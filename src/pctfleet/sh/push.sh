# shellcheck shell=sh
# Receive a file on stdin into a temp file beside DEST, check its size and sha256,
# then rename it over DEST: a reader sees the old file or the new one, never half.
# argv: DEST MODE OWNER SIZE SHA256
set -eu
dest=$1 mode=$2 owner=$3 size=$4 sum=$5
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
mv -f -- "$tmp" "$dest"
trap - EXIT
