# inputs: VENV CH_ARG SOURCE
# uses: cccl_paths exchange
# shellcheck shell=sh
set -e
pctfleet_cccl_paths "$VENV" "$CH_ARG" "$SOURCE"
if [ ! -d "$ORIG" ]; then
  echo "no saved original tree at $ORIG: reinstall nvidia-cuda-cccl" >&2; exit 1
fi
pctfleet_exchange "$ORIG" "$DST"
rm -rf "$ORIG"
echo "restored the wheel's CCCL tree"
