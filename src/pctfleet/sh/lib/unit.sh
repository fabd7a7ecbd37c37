# shellcheck shell=sh
# The systemd unit pctfleet writes for a server NAME, and its companions in /etc/pctfleet:
# the launcher the unit runs and the spec it was launched with. All live in /etc, so they
# outlast a container restart (the PID file in /run does not).
pctfleet_unit() { echo "pctfleet-$1.service"; }
pctfleet_unit_file() { echo "/etc/systemd/system/pctfleet-$1.service"; }
pctfleet_unit_spec() { echo "/etc/pctfleet/server-$1.spec"; }
pctfleet_unit_launcher() { echo "/etc/pctfleet/server-$1.sh"; }
# systemd is PID 1 and running: units can be managed here.
pctfleet_systemd() {
  [ -d /run/systemd/system ] || return 1
  pu_comm=''
  IFS= read -r pu_comm 2>/dev/null < /proc/1/comm || :
  [ "$pu_comm" = systemd ]
}
# Stop, disable and remove the unit of server NAME, when there is one.
pctfleet_unit_remove() {  # name
  [ -f "$(pctfleet_unit_file "$1")" ] || return 0
  if pctfleet_systemd; then
    systemctl disable --now --quiet "$(pctfleet_unit "$1")" || :
  fi
  rm -f "$(pctfleet_unit_file "$1")" "$(pctfleet_unit_spec "$1")" "$(pctfleet_unit_launcher "$1")"
  if pctfleet_systemd; then systemctl daemon-reload; fi
}
