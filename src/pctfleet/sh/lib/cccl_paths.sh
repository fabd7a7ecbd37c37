# shellcheck shell=sh
# shellcheck disable=SC2034  # SRC, DST and ORIG are this library's results
# uses: cuda_env
# The overlay's paths: its source tree (flashinfer's bundled CCCL unless given),
# the toolkit's include/cccl, and where the wheel's own tree is kept.
pctfleet_cccl_paths() {  # venv explicit_cuda_home source
  pctfleet_cuda_env "$1" "$2"
  SRC=$3
  if [ -z "$SRC" ]; then SRC="$(pctfleet_site "$1")/flashinfer/data/cccl"; fi
  DST="$CH/include/cccl"
  ORIG="$CH/include/cccl.pctfleet-orig"
}
