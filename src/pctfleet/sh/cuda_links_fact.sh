# inputs: VENV CH_ARG
# uses: cuda_env libcuda
# shellcheck shell=sh
pctfleet_cuda_env "$VENV" "$CH_ARG"
pf_kv cuda_home "$CH"
for f in "$CH"/lib/libcudart.so.[0-9]*; do [ -e "$f" ] && pf_kv cudart "${f##*/}" && break; done
pf_kv lib64 "$(readlink "$CH/lib64")"
pf_kv libcudart "$(readlink "$CH/lib/libcudart.so")"
pf_kv libcuda "$(readlink "$CH/lib/stubs/libcuda.so")"
[ -f "$CH/lib/stubs/.pctfleet-fallback" ] && pf_kv fallback 1
pf_kv driver "$(pctfleet_libcuda)"
