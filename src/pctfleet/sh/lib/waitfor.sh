# shellcheck shell=sh
# pctfleet_wait_ok STATE HOST PORT PATH REGEX CONNECT_TIMEOUT: whether wait_for's condition
# holds now. started/present: the port accepts a connection, or the path exists (and a line
# of it matches the PCRE REGEX); stopped/absent: the port refuses, or the path is gone.
pctfleet_wait_ok() {
  if [ -n "$3" ]; then
    # shellcheck disable=SC2016 # bash expands them, from its own arguments
    if timeout "$6" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" 2>/dev/null; then
      wo_up=1
    else
      wo_up=0
    fi
  elif [ -n "$5" ]; then
    if [ -f "$4" ] && grep -qP -- "$5" "$4" 2>/dev/null; then wo_up=1; else wo_up=0; fi
  elif [ -e "$4" ]; then
    wo_up=1
  else
    wo_up=0
  fi
  case $1 in
    started | present) [ "$wo_up" = 1 ] ;;
    *) [ "$wo_up" = 0 ] ;;
  esac
}
