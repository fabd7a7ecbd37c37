# shellcheck shell=sh
# shellcheck disable=SC2034  # CH and CH_FROM are this library's results, read by the caller
# Where a venv's site-packages and its CUDA toolkit (the pip wheels' nvidia/cu13) are.
pctfleet_site() {  # venv
  ps_n=0 ps_d=
  for d in "$1"/lib/python3*/site-packages; do [ -d "$d" ] && ps_n=$((ps_n + 1)) && ps_d=$d; done
  if [ "$ps_n" -ne 1 ] && [ -x "$1/bin/python" ]; then
    ps_d=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') ||
      ps_d=
  fi
  if [ -n "$ps_d" ] && [ -d "$ps_d" ]; then echo "$ps_d"; fi
}
pctfleet_find_cuda_home() {  # venv [explicit]: sets $CH ('' when none) and $CH_FROM
  CH=$2 CH_FROM=argument
  [ -n "$CH" ] && return 0
  CH=${CUDA_HOME:-${CUDA_PATH:-}} CH_FROM=env
  [ -n "$CH" ] && return 0
  CH='' CH_FROM=venv
  ch_site=$(pctfleet_site "$1")
  if [ -n "$ch_site" ] && [ -d "$ch_site/nvidia/cu13" ]; then CH="$ch_site/nvidia/cu13"; fi
  return 0
}
pctfleet_cuda_home_target() {  # venv [explicit]: $CH as above, else where the wheels unpack
  # Never '' (a change script must not write below /include), even before an install.
  pctfleet_find_cuda_home "$1" "$2"
  if [ -z "$CH" ]; then
    CH=$(pctfleet_site "$1")
    CH="${CH:-$1/lib/python3/site-packages}/nvidia/cu13"
  fi
  return 0
}
