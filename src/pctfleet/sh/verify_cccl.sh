# shellcheck shell=sh
# verify: the CCCL overlay's manifest against the tree as it is now.
# inputs: VENV MANIFEST
# uses: kv cuda_home cccl
pctfleet_cuda_home_target "$VENV" ""
DST="$CH/include/cccl"
pf_kv dst "$DST"
if [ -f "$DST/$MANIFEST" ]; then
  pf_kv manifest "$(base64 -w0 < "$DST/$MANIFEST")"
  pf_kv tree_hash "$(pctfleet_tree_hash "$DST")"
fi
[ -d "$DST" ] && pf_kv version "$(pctfleet_cccl_version "$DST")"
