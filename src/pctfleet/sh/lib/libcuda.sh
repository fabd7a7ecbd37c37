# shellcheck shell=sh
# The driver's libcuda.so.1 as the dynamic linker sees it (ldconfig -p): the first 64-bit
# entry (x86-64, AArch64), else the first one; a 32-bit libcuda can come first in the list.
pctfleet_libcuda() {
  lc_all=$(ldconfig -p 2>/dev/null |
    sed -n 's/^[[:space:]]*libcuda\.so\.1 (\([^)]*\)) => \(.*\)$/\1|\2/p')
  lc_one=$(printf '%s\n' "$lc_all" | grep '^[^|]*64|' | head -n 1)
  [ -n "$lc_one" ] || lc_one=$(printf '%s\n' "$lc_all" | head -n 1)
  [ -z "$lc_one" ] || echo "${lc_one#*|}"
}
