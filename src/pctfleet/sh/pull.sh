# shellcheck shell=sh
# Send a file on stdout, then its sha256 and size as a marked line on stderr.
# argv: PATH
set -eu
[ -f "$1" ] || { echo "no such file: $1" >&2; exit 96; }
cat -- "$1"
s=$(sha256sum < "$1")
printf '\036pctfleet-sum %s %s\n' "${s%% *}" "$(wc -c < "$1")" >&2
