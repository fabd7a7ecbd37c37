# shellcheck shell=sh
# No driver: an empty shared object named like the driver library ($CH from cuda_links.sh).
# Enough for `-lcuda` to resolve at link time, honest about having no symbols (the marker).
if ! command -v gcc >/dev/null 2>&1; then
  echo "gcc is needed to build the libcuda stub" >&2; exit 1
fi
tmp=$(mktemp -d)
printf 'void pctfleet_libcuda_stub(void) {}\n' > "$tmp/stub.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$CH/lib/stubs/libcuda.so.fallback.tmp" "$tmp/stub.c"
rm -rf "$tmp"
mv -f "$CH/lib/stubs/libcuda.so.fallback.tmp" "$CH/lib/stubs/libcuda.so.fallback"
ln -sfn libcuda.so.fallback "$CH/lib/stubs/libcuda.so.pctfleet-tmp"
mv -Tf "$CH/lib/stubs/libcuda.so.pctfleet-tmp" "$CH/lib/stubs/libcuda.so"
echo "no driver libcuda.so.1: built a symbol-less stub" > "$CH/lib/stubs/.pctfleet-fallback"
