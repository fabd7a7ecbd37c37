# shellcheck shell=sh
# pctfleet_copy SRC DEST MODE SHA1: copy a file already in the container to DEST through a
# temp file beside it (a reader sees the old file or the new one, never half), given MODE,
# after checking it still holds the bytes the probe read (SHA1).
pctfleet_copy() {
  cf_tmp=$(mktemp "$(dirname -- "$2")/.pctfleet-copy.XXXXXX") || return 1
  if ! cat -- "$1" > "$cf_tmp"; then rm -f -- "$cf_tmp"; return 1; fi
  cf_sum=$(sha1sum < "$cf_tmp")
  if [ "${cf_sum%% *}" != "$4" ]; then
    rm -f -- "$cf_tmp"
    echo "$1 changed since the probe read it (sha1 ${cf_sum%% *}, not $4): run again" >&2
    return 1
  fi
  if ! chmod -- "$3" "$cf_tmp" || ! mv -f -- "$cf_tmp" "$2"; then
    rm -f -- "$cf_tmp"; return 1
  fi
}
