# shellcheck shell=sh
# Whether wait_for's condition already holds (`ok`), and the file's text for its
# search_regex match groups when it does.
# inputs: WF_STATE WF_HOST WF_PORT WF_PATH WF_REGEX WF_CONNECT WF_LIMIT
# uses: kv waitfor
if pctfleet_wait_ok "$WF_STATE" "$WF_HOST" "$WF_PORT" "$WF_PATH" "$WF_REGEX" "$WF_CONNECT"; then
  pf_kv ok 1
  if [ -n "$WF_REGEX" ] && [ "$(wc -c < "$WF_PATH")" -le "$WF_LIMIT" ]; then
    pf_kv content "$(base64 -w0 < "$WF_PATH")"
  fi
fi
