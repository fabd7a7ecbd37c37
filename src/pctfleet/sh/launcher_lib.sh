# shellcheck shell=sh
# pf_kv KEY VALUE: the one way a probe prints a fact (value base64-encoded, one line).
pf_kv() { printf '%s=' "$1"; printf '%s' "$2" | base64 -w0; echo; }
# shellcheck shell=sh
# uses: kv
# Export every assignment of an env file (as the server sees it) into this shell.
pctfleet_source_env() {  # file
  if [ -f "$1" ]; then
    set -a
    # shellcheck disable=SC1090  # the file is the operator's, named at run time
    . "$1"
    set +a
  fi
}
# What an env file sets each NAME to, read the way the launch does (sourced by sh), as
# `pf_kv file_NAME BASE64`. Our PATH is put back before any tool runs: the file sets it too.
pctfleet_env_values() {  # file name...
  [ -f "$1" ] || return 0
  (
    pctfleet_file=$1
    shift
    pctfleet_names=$*
    pctfleet_path=$PATH
    for pctfleet_n; do
      case $pctfleet_n in '' | [0-9]* | *[!A-Za-z0-9_]*) return 1 ;; esac
      unset "$pctfleet_n"
    done
    # shellcheck disable=SC1090  # the file is the operator's, named at run time
    . "$pctfleet_file" >/dev/null 2>&1
    PATH=$pctfleet_path
    for pctfleet_n in $pctfleet_names; do
      pctfleet_val=
      eval "pctfleet_set=\${$pctfleet_n+x} pctfleet_val=\${$pctfleet_n-}"
      [ -z "$pctfleet_set" ] ||
        pf_kv "file_$pctfleet_n" "$(printf %s "$pctfleet_val" | base64 -w0)"
    done
  )
}
