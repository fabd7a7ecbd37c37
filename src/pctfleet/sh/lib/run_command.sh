# shellcheck shell=sh
# What command and shell need around the program they run, to register what
# ansible-core's command module registers.
#
# pf_env NAME WORD: the environment's value of NAME (exported: the shell's own
# variables, IFS or the script's, are not the environment Python's expandvars
# reads), its final line breaks kept; else WORD, as written.
pf_env() {
  if printenv "$1" > /dev/null; then
    pf_value=$(printenv "$1"; echo x)
    printf '%s' "${pf_value%?x}"
  else
    printf '%s' "$2"
  fi
}
# pf_exec_errno PROGRAM: 0 when execvp would start PROGRAM, else the errno it would
# fail with (2: nothing there, 13: there but not an executable file), as Python's
# subprocess searches PATH (a name with a slash is not searched for).
pf_exec_errno() {
  case $1 in
    */*) pf_runnable "$1"; return ;;
  esac
  ( set -f; IFS=:; pf_errno=2
    for pf_dir in ${PATH:-/bin:/usr/bin}; do
      pf_runnable "${pf_dir:-.}/$1"; pf_found=$?
      [ "$pf_found" = 0 ] && exit 0
      [ "$pf_found" = 13 ] && pf_errno=13
    done
    exit "$pf_errno" )
}
pf_runnable() {
  if [ ! -e "$1" ]; then return 2; fi
  if [ -f "$1" ] && [ -x "$1" ]; then return 0; fi
  return 13
}
# pf_now: the container's local time, to the microsecond, as one word.
pf_now() { date '+%Y-%m-%dT%H:%M:%S.%6N' 2>/dev/null; }
