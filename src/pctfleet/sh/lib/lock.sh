# shellcheck shell=sh
# One run changes a container at a time: the lock directory, its holder file and lease.
# Exits 75 (EX_TEMPFAIL) when another live run holds it; takes over a stale one.
PCTFLEET_LOCK_DIR=/run/pctfleet/run.lock
pctfleet_lock() {  # run_id lease_seconds who
  d=$PCTFLEET_LOCK_DIR
  mkdir -p "${d%/*}"
  if mkdir "$d" 2>/dev/null; then
    date +%s > "$d/since"
  else
    h_run=; h_exp=0; h_pid=0; h_who=; h_since=$(cat "$d/since" 2>/dev/null)
    read -r h_run h_exp h_pid h_who < "$d/holder" 2>/dev/null
    if [ "$h_run" != "$1" ]; then
      alive=; [ "${h_pid:-0}" -gt 1 ] 2>/dev/null && kill -0 "$h_pid" 2>/dev/null && alive=1
      if [ -n "$alive" ] || [ "${h_exp:-0}" -gt "$(date +%s)" ]; then
        echo "pctfleet-lock-busy run $h_run by $h_who (lease until $h_exp, pid $h_pid," \
          "since ${h_since:-?})" >&2
        exit 75
      fi
      mv "$d" "$d.stale.$$" 2>/dev/null && rm -rf "$d.stale.$$"
      if ! mkdir "$d" 2>/dev/null; then
        echo "pctfleet-lock-busy run (taken over meanwhile)" >&2; exit 75
      fi
      date +%s > "$d/since"
      echo "took over the stale lock of run $h_run by $h_who" >&2
    fi
  fi
  pctfleet_lease "$1" "$2" "$$" "$3"
}
pctfleet_lease() {  # run_id lease_seconds pid who
  echo "$1 $(( $(date +%s) + $2 )) $3 $4" > "$PCTFLEET_LOCK_DIR/holder.tmp"
  mv -f "$PCTFLEET_LOCK_DIR/holder.tmp" "$PCTFLEET_LOCK_DIR/holder"
}
