# shellcheck shell=sh
# What `apt` and `package` read: `dpkg=0` where there is no dpkg-query; else each of
# PKGS (checked names, split on spaces) as `name<TAB>status<TAB>version`; the candidates
# from `apt-cache policy` only when LATEST=1; the cache's age only when CACHE=1; how many
# packages `apt-get autoremove` would remove only when AUTOREMOVE=1.
# inputs: PKGS LATEST CACHE AUTOREMOVE
if ! command -v dpkg-query >/dev/null 2>&1; then pf_kv dpkg 0; exit 0; fi
pf_kv dpkg 1
if [ -n "$PKGS" ]; then
  # shellcheck disable=SC2086,SC2016
  pf_kv installed "$(dpkg-query -W -f='${Package}\t${db:Status-Abbrev}\t${Version}\n' -- $PKGS 2>/dev/null)"
fi
if [ "$LATEST" = 1 ]; then
  # shellcheck disable=SC2086
  pf_kv policy "$(LC_ALL=C apt-cache policy -- $PKGS 2>/dev/null)"
fi
if [ "$CACHE" = 1 ]; then
  ap_stamp=$(stat -c %Y /var/lib/apt/periodic/update-success-stamp 2>/dev/null \
    || stat -c %Y /var/lib/apt/lists 2>/dev/null)
  pf_kv stamp "$ap_stamp"
  pf_kv now "$(date +%s)"
fi
if [ "$AUTOREMOVE" = 1 ]; then
  pf_kv autoremove "$(apt-get -s autoremove 2>/dev/null | grep -c '^Remv')"
fi
