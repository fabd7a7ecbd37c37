# shellcheck shell=sh
# A unit's state for `systemd_service` and `service`: `systemd=0` where systemd is not
# the init (no /run/systemd/system), else ActiveState, UnitFileState, LoadState and
# NeedDaemonReload as `systemctl show` prints them.
# inputs: UNIT
if [ ! -d /run/systemd/system ]; then pf_kv systemd 0; exit 0; fi
pf_kv systemd 1
pf_kv show "$(systemctl show -p ActiveState,UnitFileState,LoadState,NeedDaemonReload -- "$UNIT")"
