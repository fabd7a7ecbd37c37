# shellcheck shell=sh
# What `get_url` reads: the file it would write (DEST, or DEST/NAME where DEST is a
# folder), its mode, owner and group, and its checksum by ALGO (sha1, sha256, ...).
# inputs: DEST NAME ALGO
gu_path=$DEST
if [ -d "$gu_path" ]; then gu_path=$gu_path/$NAME; fi
pf_kv path "$gu_path"
if [ -f "$gu_path" ]; then
  pf_kv stat "$(stat -c '%a %U %G' -- "$gu_path")"
  gu_sum=$("${ALGO}sum" < "$gu_path"); pf_kv sum "${gu_sum%% *}"
fi
