"""The CUDA toolchain flashinfer's JIT compiles with: matched, linked, overlaid, cache fresh."""

from pctfleet.infra import check, verdict_cccl, verdict_jit, verdict_links, verdict_toolchain

test_toolchain_matched = check(
    verdict_toolchain,
    "nvcc, ptxas, cicc and CUDART agree, as the pip metadata says; no stray headers;"
    " cuRAND headers present.",
)
test_links_resolve = check(
    verdict_links,
    "lib64, lib64/libcudart.so and lib64/stubs/libcuda.so resolve (flashinfer's -L/-l).",
)
test_cccl_overlay_matches_manifest = check(
    verdict_cccl, "include/cccl hashes to what the overlay manifest recorded."
)
test_jit_cache_not_stale = check(
    verdict_jit, "Every flashinfer cache folder is stamped with the current toolchain id."
)
