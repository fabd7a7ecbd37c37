# shellcheck shell=sh
# Stop, disable and remove the systemd unit pctfleet wrote for server NAME, if any.
# inputs: NAME
# uses: unit
pctfleet_unit_remove "$NAME"
