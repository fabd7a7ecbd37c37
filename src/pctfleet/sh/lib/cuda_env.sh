# shellcheck shell=sh
# shellcheck disable=SC2034  # CH is this library's result, read by the caller
# uses: cuda_home
# $CH for a change script: the CUDA home found, or where the wheels will unpack.
# Never '': a change script must not write below /include.
pctfleet_cuda_env() {  # venv [explicit cuda_home]
  pctfleet_find_cuda_home "$1" "$2"
  if [ -z "$CH" ]; then
    CH=$(pctfleet_site "$1"); CH="${CH:-$1/lib/python3/site-packages}/nvidia/cu13"
  fi
}
