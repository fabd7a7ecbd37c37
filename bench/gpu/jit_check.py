"""flashinfer's JIT through whatever CUDA_HOME the environment gives: decode and prefill.

    CUDA_HOME=... FLASHINFER_WORKSPACE_BASE=<fresh> python bench/gpu/jit_check.py OUT.json

Builds (fresh cache) and runs `single_decode_with_kv_cache` and
`single_prefill_with_kv_cache` (causal) in float16 on random data, each against
softmax(q k^T / sqrt(d)) v computed by torch in float64. Records the nvcc the
JIT used, the include paths and cuda_home of its build.ninja files, the
compile seconds and, on a failed build, the compiler's own error lines.
Exit 0 when both kernels built and matched the reference.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path

HEADS_Q, HEADS_KV, HEAD_DIM = 32, 8, 128
KV_LEN, QO_LEN = 2048, 128
TOLERANCE = 2e-2  # max relative error, float16 against float64
ERROR_LINE = re.compile(r"error|fatal|cannot find|undefined|incompatible", re.IGNORECASE)


def reference(q, k, v, causal: bool):  # noqa: ANN001, ANN201 - torch tensors
    """softmax(q k^T / sqrt(d)) v in float64, GQA heads repeated; q is [qo, heads, d]."""
    import torch

    group = HEADS_Q // HEADS_KV
    k64 = k.double().repeat_interleave(group, dim=1)
    v64 = v.double().repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q.double(), k64) / math.sqrt(HEAD_DIM)
    if causal:  # the last query row sees every key (bottom-right aligned, as flashinfer)
        offset = k.shape[0] - q.shape[0]
        rows = torch.arange(q.shape[0], device=q.device)[:, None] + offset
        mask = torch.arange(k.shape[0], device=q.device)[None, :] > rows
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v64)


def compare(out, ref) -> dict:  # noqa: ANN001
    diff = (out.double() - ref).abs()
    rel = diff.max().item() / ref.abs().max().item()
    return {"max_rel_error": rel, "max_abs_error": diff.max().item(), "ok": rel < TOLERANCE}


def ninja_facts(workspace: Path) -> dict:
    """cuda_home, nvcc and the -I/-isystem paths of every build.ninja the JIT wrote."""
    facts: dict = {"cuda_home": set(), "nvcc": set(), "includes": set()}
    for path in workspace.rglob("build.ninja"):
        for line in path.read_text(errors="replace").splitlines():
            key, sep, value = line.partition(" = ")
            if sep and key in ("cuda_home", "nvcc"):
                facts[key].add(value)
            facts["includes"].update(re.findall(r"(?:-I|-isystem )\s*(\S+)", line))
    return {k: sorted(v) for k, v in facts.items()}


def run_case(name: str, call, case: dict) -> bool:  # noqa: ANN001
    started = time.monotonic()
    try:
        ok = call(case)
    except Exception as exc:  # noqa: BLE001 - the build's own message is the evidence
        text = str(exc)
        case["error_lines"] = [ln.strip() for ln in text.splitlines() if ERROR_LINE.search(ln)][
            :12
        ] or [text[-600:]]
        ok = False
    case["seconds"] = round(time.monotonic() - started, 2)
    print(f"{name}: {'ok' if ok else 'FAILED'} {case}", flush=True)
    return ok


def main(out: Path) -> int:
    import flashinfer
    import torch

    workspace = Path(os.environ.get("FLASHINFER_WORKSPACE_BASE", "/tmp"))
    result: dict = {
        "flashinfer": flashinfer.__version__,
        "torch": torch.__version__,
        "CUDA_HOME": os.environ.get("CUDA_HOME"),
        "nvcc_on_path": shutil.which("nvcc"),
        "workspace": str(workspace),
    }
    gen = torch.Generator(device="cuda").manual_seed(2026)
    dtype = torch.float16

    def rand(*shape):  # noqa: ANN002, ANN202
        return torch.randn(*shape, device="cuda", dtype=dtype, generator=gen)

    k, v = rand(KV_LEN, HEADS_KV, HEAD_DIM), rand(KV_LEN, HEADS_KV, HEAD_DIM)

    def decode(case: dict) -> bool:
        q = rand(HEADS_Q, HEAD_DIM)
        out = flashinfer.single_decode_with_kv_cache(q, k, v)
        case.update(compare(out, reference(q[None], k, v, causal=False)[0]))
        return case["ok"]

    def prefill(case: dict) -> bool:
        q = rand(QO_LEN, HEADS_Q, HEAD_DIM)
        out = flashinfer.single_prefill_with_kv_cache(q, k, v, causal=True)
        case.update(compare(out, reference(q, k, v, causal=True)))
        return case["ok"]

    result["decode"], result["prefill"] = {}, {}
    ok = run_case("decode", decode, result["decode"])
    ok = run_case("prefill", prefill, result["prefill"]) and ok
    result["ninja"] = ninja_facts(workspace)
    result["ok"] = ok
    out.write_text(json.dumps(result, indent=2, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
