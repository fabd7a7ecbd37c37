# inputs: VENV CH_ARG SOURCE
# uses: cccl_paths cccl exchange
# shellcheck shell=sh
# Stage the new tree beside the old one, manifest inside, then swap the two.
set -e
pctfleet_cccl_paths "$VENV" "$CH_ARG" "$SOURCE"
STAGE="$CH/include/.cccl.pctfleet-stage"
rm -rf "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"
cp -a "$SRC/libcudacxx/include/." "$STAGE/"
cp -a "$SRC/cub/cub" "$STAGE/cub"
cp -a "$SRC/thrust/thrust" "$STAGE/thrust"
hash=$(pctfleet_tree_hash "$STAGE")
version=$(pctfleet_cccl_version "$STAGE")
# Written by json.dump: a source path holding a quote or a backslash stays valid JSON.
python3 - "$SRC" "$version" "$hash" "$STAGE/.pctfleet-overlay.json" <<'PCTFLEET_PY'
import json, sys, time
source, version, tree_hash, path = sys.argv[1:5]
written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
manifest = {"source": source, "cccl_version": version, "tree_hash": tree_hash, "written": written}
with open(path, "w") as fh:
    json.dump(manifest, fh)
    fh.write("\n")
PCTFLEET_PY
sync -f "$STAGE/.pctfleet-overlay.json" 2>/dev/null || true
if [ ! -d "$DST" ]; then mv "$STAGE" "$DST"; exit 0; fi
pctfleet_exchange "$STAGE" "$DST"
# $STAGE now holds the replaced tree: keep the wheel's original once, drop later overlays.
if [ ! -d "$ORIG" ] && [ ! -f "$STAGE/.pctfleet-overlay.json" ]; then
  mv "$STAGE" "$ORIG"
fi
echo "overlaid CCCL $version ($hash)"
