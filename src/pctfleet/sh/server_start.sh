# shellcheck shell=sh
# Launch a server detached (setsid, its own log, a PID file and the spec it was launched
# with), then wait until every given readiness check holds (lib/ready.sh). Inputs are SRV_
# names: the env file is sourced into this shell. A systemd unit pctfleet wrote for the
# same server (SRV_NAME) is disabled and removed first; lib/launch.sh stops the rest.
# "$@": NAME=value words for the server's environment, then `setsid` and its command line.
# inputs: SRV_PIDFILE SRV_LOG SRV_GRACE SRV_WORKDIR SRV_ENV_FILE SRV_SPEC SRV_URL SRV_STATUS SRV_TCP_ADDRESS SRV_TCP_PORT SRV_READY_LOG SRV_FAIL_CHECK SRV_FAIL_LOG SRV_TIMEOUT SRV_TICKS SRV_PORT SRV_STALE SRV_NAME
# uses: launch envfile ready unit
set -e
pctfleet_unit_remove "$SRV_NAME"
srv_prepare
if [ -n "$SRV_WORKDIR" ]; then cd "$SRV_WORKDIR"; fi
if [ -n "$SRV_ENV_FILE" ]; then pctfleet_source_env "$SRV_ENV_FILE"; fi
env "$@" </dev/null >"$SRV_LOG" 2>&1 &
pid=$!
srv_record "$pid" "$SRV_PIDFILE.spec"
srv_wait "$pid"
