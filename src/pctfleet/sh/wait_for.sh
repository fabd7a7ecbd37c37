# shellcheck shell=sh
# wait_for at apply time: after WF_DELAY seconds, check every WF_SLEEP seconds until the
# condition holds (exit 0) or WF_TIMEOUT seconds have passed (exit 1). Without a port or
# a path it only sleeps WF_TIMEOUT. Prints `elapsed`, and the file's text for search_regex.
# inputs: WF_STATE WF_HOST WF_PORT WF_PATH WF_REGEX WF_CONNECT WF_LIMIT WF_TIMEOUT WF_DELAY WF_SLEEP
# uses: kv waitfor
wf_start=$(date +%s)
if [ -z "$WF_PORT" ] && [ -z "$WF_PATH" ]; then
  sleep "$WF_TIMEOUT"; pf_kv elapsed "$(($(date +%s) - wf_start))"; exit 0
fi
sleep "$WF_DELAY"
until pctfleet_wait_ok "$WF_STATE" "$WF_HOST" "$WF_PORT" "$WF_PATH" "$WF_REGEX" "$WF_CONNECT"; do
  if [ "$(($(date +%s) - wf_start))" -ge "$WF_TIMEOUT" ]; then
    pf_kv elapsed "$(($(date +%s) - wf_start))"; exit 1
  fi
  sleep "$WF_SLEEP"
done
pf_kv elapsed "$(($(date +%s) - wf_start))"
if [ -n "$WF_REGEX" ] && [ "$(wc -c < "$WF_PATH")" -le "$WF_LIMIT" ]; then
  pf_kv content "$(base64 -w0 < "$WF_PATH")"
fi
