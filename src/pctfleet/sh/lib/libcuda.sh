# shellcheck shell=sh
# The driver's libcuda.so.1 as the dynamic linker sees it (ldconfig -p), first match.
pctfleet_libcuda() {
  ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*libcuda\.so\.1 (.*) => \(.*\)$/\1/p' | head -n 1
}
