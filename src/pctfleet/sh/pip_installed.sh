# shellcheck shell=sh
# Every distribution PYTHON sees, as one JSON fact `pkgs` (PEP 503 names); `venv=absent`
# when there is no such python. PROGRAM is the reader (it prints through its own pf_kv).
# `uv`: the container's uv, the installer a change prefers.
# inputs: PYTHON PROGRAM
# uses: kv pip
pi_uv=$(pctfleet_uv)
if [ -n "$pi_uv" ]; then pf_kv uv "$pi_uv"; fi
if command -v "$PYTHON" >/dev/null 2>&1; then
  "$PYTHON" -c "$PROGRAM"
else
  pf_kv venv absent
fi
