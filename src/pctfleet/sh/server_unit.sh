# shellcheck shell=sh
# Launch a server as the systemd unit pctfleet-SRV_NAME.service (SRV_UNIT_TEXT), which
# runs SRV_LAUNCHER_TEXT: enabled, so it comes back after a container restart without
# pctfleet. The PID file gets the unit's main PID (a session leader: systemd calls
# setsid); the spec goes to /etc/pctfleet. Then wait as the detached mode does.
# inputs: SRV_PIDFILE SRV_LOG SRV_GRACE SRV_WORKDIR SRV_ENV_FILE SRV_SPEC SRV_URL SRV_STATUS SRV_TCP_ADDRESS SRV_TCP_PORT SRV_READY_LOG SRV_FAIL_CHECK SRV_FAIL_LOG SRV_TIMEOUT SRV_TICKS SRV_PORT SRV_STALE SRV_NAME SRV_UNIT_TEXT SRV_LAUNCHER_TEXT
# uses: launch ready unit
set -e
su_unit=$(pctfleet_unit "$SRV_NAME")
su_file=$(pctfleet_unit_file "$SRV_NAME")
su_launcher=$(pctfleet_unit_launcher "$SRV_NAME")
if [ -f "$su_file" ]; then systemctl stop "$su_unit" || :; fi
srv_prepare
mkdir -p "$(dirname "$su_launcher")"
printf '%s\n' "$SRV_LAUNCHER_TEXT" > "$su_launcher.tmp"
chmod 755 "$su_launcher.tmp" && mv -f "$su_launcher.tmp" "$su_launcher"
printf '%s\n' "$SRV_UNIT_TEXT" > "$su_file.tmp" && mv -f "$su_file.tmp" "$su_file"
systemctl daemon-reload
systemctl enable --quiet "$su_unit"
systemctl start "$su_unit"
pid=$(systemctl show -p MainPID --value "$su_unit")
if [ -z "$pid" ] || [ "$pid" = 0 ]; then
  srv_fail "systemd did not start $su_unit: $(systemctl is-active "$su_unit" 2>&1)"
fi
srv_record "$pid" "$(pctfleet_unit_spec "$SRV_NAME")"
srv_wait "$pid"
