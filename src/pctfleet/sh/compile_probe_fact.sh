# inputs: VENV CH_ARG
# uses: cuda_env toolchain_id
# shellcheck shell=sh
pctfleet_cuda_env "$VENV" "$CH_ARG"
pf_kv toolchain "$(pctfleet_toolchain_id "$VENV" "$CH")"
[ -f "$CH/.pctfleet-probe" ] && pf_kv stamp "$(cat "$CH/.pctfleet-probe")"
FI="$(pctfleet_site "$VENV")/flashinfer/data/cccl"
pf_kv fi_cccl "$FI"
[ -d "$FI" ] && pf_kv fi_present 1
pf_kv cuda_home "$CH"
