# shellcheck shell=sh
# A regular file's sha256 (a link is not followed), and its text for a diff when asked and small.
# inputs: DEST WANT_DIFF DIFF_LIMIT
if [ -f "$DEST" ] && [ ! -L "$DEST" ]; then
  s=$(sha256sum < "$DEST"); pf_kv sha256 "${s%% *}"
  if [ "$WANT_DIFF" = 1 ] && [ "$(wc -c < "$DEST")" -le "$DIFF_LIMIT" ]; then
    pf_kv content "$(base64 -w0 < "$DEST")"
  fi
fi
