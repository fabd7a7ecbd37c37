# inputs: VENV CH_ARG STAMP
# uses: cuda_env toolchain_id
# shellcheck shell=sh
# "$@": the cache folders; their facts are numbered in that order (folder0, stamp0, ...).
pctfleet_cuda_env "$VENV" "$CH_ARG"
pf_kv toolchain "$(pctfleet_toolchain_id "$VENV" "$CH")"
i=0
for d in "$@"; do
  pf_kv "folder$i" "$d"
  [ -f "$d/$STAMP" ] && pf_kv "stamp$i" "$(cat "$d/$STAMP")"
  [ -d "$d" ] && pf_kv "entries$i" \
    "$(find "$d" -mindepth 1 -maxdepth 1 ! -name "$STAMP" -printf . | wc -c)"
  i=$((i + 1))
done
