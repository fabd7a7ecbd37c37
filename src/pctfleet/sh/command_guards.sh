# shellcheck shell=sh
# command/shell guards: `creates` already there, `removes` already gone ('' = not asked).
# Each is a path or a glob pattern, as ansible-core reads them (Python's glob: a match,
# or the path itself, a dangling link too).
# inputs: CREATES REMOVES
pf_matches() {
  ( IFS=''; set +f
    # shellcheck disable=SC2086 # the pattern must expand; IFS='' keeps spaces in it
    for found in $1; do
      if [ -e "$found" ] || [ -L "$found" ]; then exit 0; fi
    done
    exit 1 )
}
if [ -n "$CREATES" ] && pf_matches "$CREATES"; then pf_kv creates 1; fi
if [ -n "$REMOVES" ] && ! pf_matches "$REMOVES"; then pf_kv removes_missing 1; fi
true
