# shellcheck shell=sh
# verify: the lib64 links flashinfer's link line needs, and the driver's libcuda.
# inputs: VENV
# uses: kv cuda_home libcuda
pctfleet_cuda_home_target "$VENV" ""
pf_kv cuda_home "$CH"
# Through lib64: that is the folder flashinfer's link line hard-codes.
for l in lib64 lib64/libcudart.so lib64/stubs/libcuda.so; do
  p="$CH/$l"
  [ -L "$p" ] && pf_kv "link:$l" "$(readlink "$p")"
  [ -e "$p" ] && pf_kv "real:$l" "$(readlink -f "$p")"
  [ -f "$p" ] && pf_kv "file:$l" 1
  [ -d "$p" ] && pf_kv "dir:$l" 1
done
[ -f "$CH/lib/stubs/.pctfleet-fallback" ] && pf_kv fallback 1
drv=$(pctfleet_libcuda)
[ -n "$drv" ] && pf_kv driver "$drv" && pf_kv driver_real "$(readlink -f "$drv")"
