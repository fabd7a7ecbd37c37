# inputs: VENV CH_ARG SOURCE
# uses: cccl_paths cccl
# shellcheck shell=sh
pctfleet_cccl_paths "$VENV" "$CH_ARG" "$SOURCE"
pf_kv cuda_home "$CH"
pf_kv source "$SRC"
if [ -d "$SRC/libcudacxx/include" ]; then
  pf_kv source_version "$(pctfleet_cccl_version "$SRC/libcudacxx/include")"
fi
[ -d "$DST" ] && pf_kv dst_version "$(pctfleet_cccl_version "$DST")"
[ -d "$ORIG" ] && pf_kv orig 1
if [ -f "$DST/.pctfleet-overlay.json" ]; then
  pf_kv manifest "$(cat "$DST/.pctfleet-overlay.json")"
  pf_kv tree_hash "$(pctfleet_tree_hash "$DST")"
fi
