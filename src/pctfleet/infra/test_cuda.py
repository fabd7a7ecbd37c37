"""The CUDA toolchain flashinfer's JIT compiles with: matched, linked, overlaid, cache fresh."""

from pctfleet.infra import verdict_cccl, verdict_jit, verdict_links, verdict_toolchain


def test_toolchain_matched(facts, note):
    """nvcc, ptxas, cicc and CUDART agree, as the pip metadata says; no stray headers."""
    verdict = verdict_toolchain(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message


def test_links_resolve(facts, note):
    """lib64, lib64/libcudart.so and lib64/stubs/libcuda.so resolve (flashinfer's -L/-l)."""
    verdict = verdict_links(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message


def test_cccl_overlay_matches_manifest(facts, note):
    """include/cccl hashes to what the overlay manifest recorded."""
    verdict = verdict_cccl(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message


def test_jit_cache_not_stale(facts, note):
    """Every flashinfer cache folder is stamped with the current toolchain id."""
    verdict = verdict_jit(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message
