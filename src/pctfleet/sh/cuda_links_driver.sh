# inputs: DRIVER
# shellcheck shell=sh
# lib/stubs/libcuda.so -> the driver's libcuda.so.1 ($CH from cuda_links.sh); any stub goes.
rm -f "$CH/lib/stubs/.pctfleet-fallback" "$CH/lib/stubs/libcuda.so.fallback"
ln -sfn "$DRIVER" "$CH/lib/stubs/libcuda.so.pctfleet-tmp"
mv -Tf "$CH/lib/stubs/libcuda.so.pctfleet-tmp" "$CH/lib/stubs/libcuda.so"
