# inputs: VENV CH_ARG CUDART
# uses: cuda_env
# shellcheck shell=sh
# lib64 -> lib and lib/libcudart.so -> the runtime's soname, each made beside and renamed over.
# cuda_links_driver.sh or cuda_links_stub.sh follows, for lib/stubs/libcuda.so.
set -e
pctfleet_cuda_env "$VENV" "$CH_ARG"
mkdir -p "$CH/lib/stubs"
ln -sfn lib "$CH/lib64.pctfleet-tmp" && mv -Tf "$CH/lib64.pctfleet-tmp" "$CH/lib64"
ln -sfn "$CUDART" "$CH/lib/libcudart.so.pctfleet-tmp"
mv -Tf "$CH/lib/libcudart.so.pctfleet-tmp" "$CH/lib/libcudart.so"
