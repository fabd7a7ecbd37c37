# shellcheck shell=sh
# What `deb822_repository` reads: its .sources file (named LEGACY where a file by that older
# name exists, else NEW), that file's mode and bytes, and the key files of the same name.
# inputs: LEGACY NEW
d8_slug=$NEW
if [ -e "/etc/apt/sources.list.d/$LEGACY.sources" ]; then d8_slug=$LEGACY; fi
d8_p=/etc/apt/sources.list.d/$d8_slug.sources
pf_kv slug "$d8_slug"
if [ -f "$d8_p" ]; then
  pf_kv mode "$(stat -c %a -- "$d8_p")"
  pf_kv content "$(base64 -w0 < "$d8_p")"
fi
for d8_ext in asc gpg; do
  if [ -e "/etc/apt/keyrings/$d8_slug.$d8_ext" ]; then pf_kv "key_$d8_ext" 1; fi
done
