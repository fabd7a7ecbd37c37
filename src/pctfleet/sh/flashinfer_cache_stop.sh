# inputs: PIDFILE GRACE
# uses: stop
# shellcheck shell=sh
# Never clear a cache under a running server: it would rebuild from a mix.
pctfleet_stop "$PIDFILE" "$GRACE" ''
