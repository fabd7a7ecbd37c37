# shellcheck shell=sh
# A user's or group's entries for `user` and `group`: the passwd line, its groups, the
# group line, and (only when PASSWORD=1) the shadow hash. Missing entries print nothing.
# inputs: ACCOUNT KIND PASSWORD
if [ "$KIND" = group ]; then
  if ac_line=$(getent group -- "$ACCOUNT"); then pf_kv group "$ac_line"; fi
  exit 0
fi
if ac_line=$(getent passwd -- "$ACCOUNT"); then
  pf_kv passwd "$ac_line"
  pf_kv groups "$(id -Gn -- "$ACCOUNT")"
  ac_gid=$(printf '%s' "$ac_line" | cut -d: -f4)
  pf_kv primary "$(getent group -- "$ac_gid" | cut -d: -f1)"
  if [ "$PASSWORD" = 1 ]; then pf_kv hash "$(getent shadow -- "$ACCOUNT" | cut -d: -f2)"; fi
fi
