# shellcheck shell=sh
# A file a task edits (lineinfile, blockinfile, replace, slurp), links followed: its type,
# real path, attributes and, when at most TEXT_LIMIT bytes, its bytes (base64).
# inputs: TEXT_PATH TEXT_LIMIT
p=$TEXT_PATH
pf_kv real "$(readlink -m -- "$p")"
if [ -d "$p" ]; then pf_kv type directory; exit 0; fi
if [ ! -e "$p" ]; then pf_kv type absent; exit 0; fi
if [ -f "$p" ]; then pf_kv type file; else pf_kv type other; fi
pf_kv mode "$(stat -L -c %a -- "$p")"
pf_kv owner "$(stat -L -c %U -- "$p")"
pf_kv group "$(stat -L -c %G -- "$p")"
ft_size=$(stat -L -c %s -- "$p")
pf_kv size "$ft_size"
if [ "$ft_size" -le "$TEXT_LIMIT" ]; then pf_kv content "$(base64 -w0 < "$p")"; fi
