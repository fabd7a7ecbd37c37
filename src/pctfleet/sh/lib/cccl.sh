# shellcheck shell=sh
# A CCCL tree's hash (manifest excluded: what the manifest promises and audit checks)
# and its version (a tree with cuda/std/__cccl/version.h below it).
pctfleet_tree_hash() {
  (cd "$1" && find . -type f ! -name '.pctfleet-overlay.json' | LC_ALL=C sort |
    xargs -d '\n' sha256sum | sha256sum | cut -c1-64)
}
pctfleet_cccl_version() {
  v=$(sed -n 's/^#define CCCL_VERSION \([0-9]*\).*/\1/p' "$1/cuda/std/__cccl/version.h" 2>/dev/null)
  [ -n "$v" ] && echo "$((v / 1000000)).$((v / 1000 % 1000)).$((v % 1000))"
}
