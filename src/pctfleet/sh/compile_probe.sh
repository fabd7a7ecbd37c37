# shellcheck shell=sh
# The compile probe: compile $SOURCE with the flags in "$@" (flashinfer's include order and
# -gencode), then link it -shared -lcudart -lcuda as a JIT module is. Exit 0 when both work.
# Prints probe_compile, probe_link, probe_linker, needed and, on failure, probe_log.
# `t` bounds each step; the temp folder goes with the EXIT trap, also when a step is killed.
# inputs: CH W SOURCE
# uses: kv
NVCC="$CH/bin/nvcc"
t() { if command -v timeout >/dev/null 2>&1; then timeout 600 "$@"; else "$@"; fi; }
needed() {
  if command -v readelf >/dev/null 2>&1; then
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'
  elif command -v objdump >/dev/null 2>&1; then
    objdump -p "$1" | sed -n 's/^ *NEEDED *//p'
  fi
}
failed() {  # step
  [ "$1" = compile ] && pf_kv probe_link skipped
  pf_kv "probe_$1" failed
  pf_kv probe_log "$(tail -n 30 "$D/log")"
  exit 1
}
D=
mkdir -p "$W" && D=$(mktemp -d "$W/pctfleet-probe.XXXXXX")
if [ -z "$D" ]; then pf_kv probe_compile failed; pf_kv probe_link skipped; exit 1; fi
trap 'rm -rf "$D"' EXIT
trap 'exit 1' INT TERM HUP
printf '%s\n' "$SOURCE" > "$D/probe.cu"
t "$NVCC" "$@" -c "$D/probe.cu" -o "$D/probe.o" >"$D/log" 2>&1 || failed compile
pf_kv probe_compile ok
LD=$(command -v "${CXX:-c++}" || command -v g++ || echo "$NVCC")
pf_kv probe_linker "$LD"
t "$LD" "$D/probe.o" -shared -L"$CH/lib64" -L"$CH/lib64/stubs" -lcudart -lcuda \
  -o "$D/probe.so" >>"$D/log" 2>&1 || failed link
pf_kv probe_link ok
pf_kv needed "$(needed "$D/probe.so" | tr '\n' ',' | sed 's/,*$//')"
