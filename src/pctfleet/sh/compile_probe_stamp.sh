# inputs: STAMP STAMP_FILE
# shellcheck shell=sh
# Follows the compile probe's subshell, whose status is $PROBE_RC: stamp a pass only.
if [ "$PROBE_RC" -eq 0 ]; then echo "$STAMP" > "$STAMP_FILE"; fi
exit "$PROBE_RC"
