# shellcheck shell=sh
# Stop what a PID file names (see lib/stop.sh); EXPECT '' checks no command line.
# inputs: PIDFILE GRACE EXPECT
# uses: stop
pctfleet_stop "$PIDFILE" "$GRACE" "$EXPECT"
