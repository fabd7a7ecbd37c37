"""A failing verdict names the provision run that repairs it, word for word."""

from __future__ import annotations

import base64
import json

import pytest

from pctfleet.infra import Gathered, verdict_cccl, verdict_jit, verdict_links, verdict_server_pid

MANIFEST = base64.b64encode(
    json.dumps({"tree_hash": "a" * 20, "cccl_version": "3.6.0", "source": "pip"}).encode()
).decode()

CASES = [
    (
        verdict_cccl,
        {"cccl": "dst=/c"},
        (False, "no overlay manifest in /c (fix: provision --tags overlay)"),
    ),
    (
        verdict_cccl,
        {"cccl": f"dst=/c\nmanifest={MANIFEST}\ntree_hash={'b' * 20}"},
        (
            False,
            f"/c changed since the overlay: tree hash {'b' * 16}, manifest says {'a' * 16} "
            "(fix: provision --tags overlay)",
        ),
    ),
    (
        verdict_cccl,
        {"cccl": f"dst=/c\nmanifest={MANIFEST}\ntree_hash={'a' * 20}\nversion=3.5.0"},
        (False, "CCCL_VERSION is 3.5.0, manifest says 3.6.0"),
    ),
    (
        verdict_cccl,
        {"cccl": f"dst=/c\nmanifest={MANIFEST}\ntree_hash={'a' * 20}\nversion=3.6.0"},
        (True, f"CCCL 3.6.0 from pip, tree hash {'a' * 16} as recorded"),
    ),
    (
        verdict_jit,
        {"jit": "toolchain=t1\nstamp0=t0"},
        (False, "JIT cache stale for toolchain t1: /j: built for t0 (fix: provision --tags cache)"),
    ),
    (
        verdict_links,
        {"links": "cuda_home=/cuda\ndir:lib64=1\nfile:lib64/libcudart.so=1"},
        (
            False,
            "lib64/stubs/libcuda.so does not resolve to a file (lib64/stubs/libcuda.so missing)"
            " (fix: provision --tags links)",
        ),
    ),
    (  # a visible driver: the stub must be its libcuda, not the symbol-less fallback
        verdict_links,
        {
            "links": "cuda_home=/cuda\ndir:lib64=1\nfile:lib64/libcudart.so=1"
            "\nfile:lib64/stubs/libcuda.so=1\nreal:lib64/stubs/libcuda.so=/cuda/stub.so"
            "\ndriver_real=/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"
        },
        (
            False,
            "stubs/libcuda.so resolves to /cuda/stub.so, not the driver's "
            "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06 (fix: provision --tags links)",
        ),
    ),
    (
        verdict_server_pid,
        {"server": "state=S"},
        (False, "no PID file /run/s.pid (fix: provision --tags server)"),
    ),
]


@pytest.mark.parametrize(("verdict_of", "sections", "expected"), CASES)
def test_verdict_message(verdict_of, sections, expected) -> None:
    gathered = Gathered.parse(sections, ["/j"], {"server_pidfile": "/run/s.pid"})
    verdict = verdict_of(gathered)
    assert (verdict.ok, verdict.message) == expected
