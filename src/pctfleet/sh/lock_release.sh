# shellcheck shell=sh
# Release the lock when this run ($1) holds it.
# uses: lock
d=$PCTFLEET_LOCK_DIR
h_run=; read -r h_run _ < "$d/holder" 2>/dev/null
[ "$h_run" = "$1" ] && rm -rf "$d"
true
