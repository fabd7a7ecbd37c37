# inputs: ENV_FILE
# uses: envfile
# shellcheck shell=sh
# The server's environment first: stray include paths live there.
pctfleet_source_env "$ENV_FILE"
