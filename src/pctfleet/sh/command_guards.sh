# shellcheck shell=sh
# command/shell guards: `creates` already there, `removes` already gone ('' = not asked).
# inputs: CREATES REMOVES
if [ -n "$CREATES" ] && [ -e "$CREATES" ]; then pf_kv creates 1; fi
if [ -n "$REMOVES" ] && ! [ -e "$REMOVES" ]; then pf_kv removes_missing 1; fi
true
