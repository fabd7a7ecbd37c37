# shellcheck shell=sh
# Export every assignment of an env file (as the server sees it) into this shell.
pctfleet_source_env() {  # file
  if [ -f "$1" ]; then
    set -a
    # shellcheck disable=SC1090  # the file is the operator's, named at run time
    . "$1"
    set +a
  fi
}
