# shellcheck shell=sh
# Ansible's `stat` of a path (links followed when FOLLOW=1): the raw stat line, link
# source and target, access, and the checksum by CHECKSUM (sha1, md5, ...; '' = none).
# inputs: STAT_PATH FOLLOW CHECKSUM
p=$STAT_PATH
if [ "$FOLLOW" = 1 ]; then set -- -L; else set --; fi
if ! { [ -e "$p" ] || { [ "$FOLLOW" != 1 ] && [ -L "$p" ]; }; }; then pf_kv exists 0; exit 0; fi
pf_kv exists 1
pf_kv stat "$(stat "$@" -c '%f %u %g %s %i %d %h %b %B %.9X %.9Y %.9Z %U %G' -- "$p")"
if [ "$FOLLOW" != 1 ] && [ -L "$p" ]; then
  pf_kv lnk_target "$(readlink -- "$p")"
  pf_kv lnk_source "$(readlink -m -- "$p")"
fi
pf_kv access "$(test -r "$p" && printf r)$(test -w "$p" && printf w)$(test -x "$p" && printf x)"
if [ -n "$CHECKSUM" ] && [ -r "$p" ] && [ -f "$p" ] && { [ "$FOLLOW" = 1 ] || [ ! -L "$p" ]; }; then
  st_sum=$("${CHECKSUM}sum" < "$p"); pf_kv checksum "${st_sum%% *}"
fi
