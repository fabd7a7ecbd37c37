# inputs: VENV CH_ARG STAMP
# uses: cuda_env toolchain_id
# shellcheck shell=sh
# "$@": the stale cache folders. Each is moved aside, made empty, and stamped with the id.
set -e
pctfleet_cuda_env "$VENV" "$CH_ARG"
id=$(pctfleet_toolchain_id "$VENV" "$CH")
for d in "$@"; do
  rm -rf "$d.pctfleet-old"
  if [ -d "$d" ]; then mv "$d" "$d.pctfleet-old"; fi
  mkdir -p "$d"
  rm -rf "$d.pctfleet-old"
  echo "$id" > "$d/$STAMP"
done
