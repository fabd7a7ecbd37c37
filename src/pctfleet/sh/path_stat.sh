# shellcheck shell=sh
# What is at a path, without following a link: its type, link target, mode, owner and group.
# inputs: STAT_PATH
p=$STAT_PATH
if [ -L "$p" ]; then pf_kv type link; pf_kv target "$(readlink -- "$p")"
elif [ -d "$p" ]; then pf_kv type directory
elif [ -e "$p" ]; then pf_kv type file
else pf_kv type absent; fi
if [ -e "$p" ] || [ -L "$p" ]; then
  # One stat for all three, a line each (no name holds a newline).
  { IFS= read -r ps_mode; IFS= read -r ps_owner; IFS= read -r ps_group; } <<PCTFLEET_STAT
$(stat -c '%a
%U
%G' -- "$p")
PCTFLEET_STAT
  pf_kv mode "$ps_mode"
  pf_kv owner "$ps_owner"
  pf_kv group "$ps_group"
fi
