# shellcheck shell=sh
# What a JIT cache was built against: the toolchain's wheels, its links, its CCCL tree.
# uses: cuda_home
pctfleet_toolchain_id() {  # venv cuda_home
  site=$(pctfleet_site "$1")
  {
    # shellcheck disable=SC2012  # dist-info names are [A-Za-z0-9_.-]; ls gives them sorted-ready
    ls -d "$site"/cuda_toolkit-*.dist-info "$site"/nvidia_cuda_*.dist-info \
      "$site"/nvidia_nvvm-*.dist-info 2>/dev/null | sed 's|.*/||' | LC_ALL=C sort
    for l in lib64 lib/libcudart.so lib/stubs/libcuda.so; do
      printf '%s -> %s\n' "$l" "$(readlink "$2/$l" 2>/dev/null)"
    done
    cat "$2/include/cccl/.pctfleet-overlay.json" 2>/dev/null
  } | sha256sum | cut -c1-16
}
