# shellcheck shell=sh
# gather_facts: the raw readings Ansible's setup facts are built from (facts/gathered.py
# turns them into ansible_facts). Files are read, never sourced: they are the container's.
# inputs: PY_FACTS
# uses: kv
[ -r /etc/os-release ] && pf_kv os_release "$(cat /etc/os-release)"
[ -r /etc/debian_version ] && pf_kv debian_version "$(cat /etc/debian_version)"
pf_kv machine "$(uname -m)"
pf_kv kernel "$(uname -r)"
pf_kv kernel_version "$(uname -v)"
pf_kv nodename "$(uname -n)"
pf_kv memtotal_kb "$(sed -n 's/^MemTotal: *\([0-9]*\) kB$/\1/p' /proc/meminfo)"
pf_kv memfree_kb "$(sed -n 's/^MemFree: *\([0-9]*\) kB$/\1/p' /proc/meminfo)"
pf_kv cpuinfo "$(awk -F': *' '
  /^processor[ \t]*:/ { n++ }
  /^physical id[ \t]*:/ { s[$2] = 1 }
  /^cpu cores[ \t]*:/ && !c { c = $2 }
  /^siblings[ \t]*:/ && !t { t = $2 }
  END { k = 0; for (i in s) k++; print n + 0, k, c + 0, t + 0 }' /proc/cpuinfo)"
pf_kv nproc "$(nproc 2>/dev/null)"
pf_kv proc1 "$(cat /proc/1/comm 2>/dev/null)"
[ -d /run/systemd/system ] && pf_kv systemd_running yes
[ -x /sbin/openrc ] && pf_kv openrc yes
[ -d /etc/init.d ] && pf_kv initd yes
for m in apt-get dnf yum zypper pacman apk; do
  command -v "$m" >/dev/null 2>&1 && pf_kv "has_$m" yes
done
for p in python3 python; do
  command -v "$p" >/dev/null 2>&1 && { pf_kv python "$("$p" -c "$PY_FACTS" 2>/dev/null)"; break; }
done
# ansible_env: the environment this runs with, as the tasks' commands get it. NUL-separated
# (a value may hold newlines), and base64 at once: a shell value cannot hold a NUL. Where
# env has no -0 (say, an old busybox), its lines.
gf_e=$(env -0 2>/dev/null | base64 -w0)
if [ -n "$gf_e" ]; then pf_kv env0 "$gf_e"; else pf_kv env "$(env)"; fi
# ansible_user_*: the real uid, uid and real gid; the login name as Python's getpass.getuser()
# finds it; its passwd entry (by that name, else by the real uid).
gf_passwd() {  # KEY FIELD: the first passwd entry whose FIELD (1 name, 3 uid) is KEY
  getent passwd "$1" 2>/dev/null || gf_k=$1 awk -F: -v f="$2" '$f == ENVIRON["gf_k"] { print; exit }' /etc/passwd
}
gf_ruid=$(id -ru)
pf_kv ids "$gf_ruid,$(id -u),$(id -rg)"
gf_user=${LOGNAME:-${USER:-${LNAME:-${USERNAME:-}}}}
pf_kv user "$gf_user"
gf_entry=
[ -n "$gf_user" ] && gf_entry=$(gf_passwd "$gf_user" 1)
[ -n "$gf_entry" ] || gf_entry=$(gf_passwd "$gf_ruid" 3)
pf_kv passwd "$gf_entry"
# ansible_date_time: one reading of the clock, its local fields in this environment's zone
# and locale (as the setup module's strftime). Then the zone at the year's start and half
# a year on: on glibc, Python's time.tzname is made from these two (the DST name is the one
# further east). Commas: plain characters, printed as they are.
gf_now=$(date +%s,%N,%Y,%m,%d,%H,%M,%S,%A,%w,%W,%z,%Z)
pf_kv date "$gf_now"
gf_t=${gf_now%%[!0-9]*}
if [ -n "$gf_t" ]; then
  gf_t=$((gf_t / 31557600 * 31557600))
  pf_kv zone_jan "$(date -d "@$gf_t" +%z,%Z 2>/dev/null)"
  pf_kv zone_jul "$(date -d "@$((gf_t + 15778800))" +%z,%Z 2>/dev/null)"
fi
