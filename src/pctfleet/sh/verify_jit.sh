# shellcheck shell=sh
# verify: the toolchain id now, and the one each JIT cache folder was stamped with.
# inputs: VENV
# uses: kv cuda_home toolchain_id
# "$@": the stamp files, in the order of the cache folders (stamp0, stamp1...).
pctfleet_cuda_home_target "$VENV" ""
pf_kv toolchain "$(pctfleet_toolchain_id "$VENV" "$CH")"
i=0
for stamp; do
  [ -f "$stamp" ] && pf_kv "stamp$i" "$(cat "$stamp")"
  i=$((i + 1))
done
