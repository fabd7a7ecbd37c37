# shellcheck shell=sh
# pf_py PYTHON [ARG...]: run the python program on stdin with pf_kv(key, value) defined,
# the python side of pf_kv (one line a value, always base64: kv.py reads both forms).
pf_py() {
  pp_bin=$1
  shift
  {
    echo 'import base64 as _b64'
    echo 'def pf_kv(key, value):'
    echo '    print(key + "=" + _b64.b64encode(str(value).encode()).decode())'
    cat
  } | "$pp_bin" - "$@"
}
