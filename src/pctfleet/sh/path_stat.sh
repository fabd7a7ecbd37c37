# shellcheck shell=sh
# What is at a path, without following a link: its type, link target, mode, owner and group.
# inputs: STAT_PATH
p=$STAT_PATH
if [ -L "$p" ]; then pf_kv type link; pf_kv target "$(readlink -- "$p")"
elif [ -d "$p" ]; then pf_kv type directory
elif [ -e "$p" ]; then pf_kv type file
else pf_kv type absent; fi
if [ -e "$p" ] || [ -L "$p" ]; then
  pf_kv mode "$(stat -c %a -- "$p")"
  pf_kv owner "$(stat -c %U -- "$p")"
  pf_kv group "$(stat -c %G -- "$p")"
fi
