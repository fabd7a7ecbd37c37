# shellcheck shell=sh
# audit: what a fingerprint holds besides the toolchain facts: every pip package (the
# python program LIST_INSTALLED), the CCCL overlay's manifest, whether the server runs.
# inputs: VENV PIDFILE MANIFEST LIST_INSTALLED
# uses: kv cuda_home pidfile
if [ -x "$VENV/bin/python" ]; then "$VENV/bin/python" -c "$LIST_INSTALLED"; fi
pctfleet_find_cuda_home "$VENV" ""
m="$CH/include/cccl/$MANIFEST"
[ -n "$CH" ] && [ -f "$m" ] && pf_kv overlay "$(cat "$m")"
if [ -n "$(pctfleet_live_pid "$PIDFILE")" ]; then pf_kv server running; else pf_kv server stopped; fi
