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
# fail with, as Python's subprocess searches PATH (a name with a slash is not searched
# for): 2 nothing there (or a `#!` interpreter that is not), 13 there but not an
# executable file, 8 an executable that is neither ELF nor `#!` (the shell would run
# it as a script; execve refuses it).
pf_exec_errno() {
  case $1 in
    */*) pf_found=$1 ;;
    *) pf_found=$(pf_on_path "$1") || return ;;
  esac
  pf_runnable "$pf_found" || return
  pf_starts "$pf_found"
}
pf_on_path() {
  ( set -f; IFS=:; pf_errno=2
    for pf_dir in ${PATH:-/bin:/usr/bin}; do
      pf_runnable "${pf_dir:-.}/$1"; pf_found=$?
      if [ "$pf_found" = 0 ]; then printf '%s' "${pf_dir:-.}/$1"; exit 0; fi
      [ "$pf_found" = 13 ] && pf_errno=13
    done
    exit "$pf_errno" )
}
pf_runnable() {
  if [ ! -e "$1" ]; then return 2; fi
  if [ -f "$1" ] && [ -x "$1" ]; then return 0; fi
  return 13
}
# pf_starts FILE: 0 when execve takes FILE (ELF, or `#!` naming a runnable file).
pf_starts() {
  pf_head=$(head -c 4 -- "$1" 2>/dev/null)
  case $pf_head in
    "$(printf '\177ELF')") return 0 ;;
    '#!'*)
      pf_line=$(head -n 1 -- "$1")
      pf_line=${pf_line#??}
      set -f
      # shellcheck disable=SC2086 # the interpreter is the line's first word
      set -- $pf_line
      set +f
      [ -n "${1:-}" ] || return 8
      pf_runnable "$1" ;;
    *) return 8 ;;
  esac
}
# pf_now: the container's local time, to the microsecond, as one word.
pf_now() { date '+%Y-%m-%dT%H:%M:%S.%6N' 2>/dev/null; }
