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
