"""The compile probe: flashinfer's JIT build in miniature, in seconds, without a GPU.

A tiny `.cu` that includes CCCL (`<cuda/std/type_traits>`, and CUB's
`<cub/block/block_reduce.cuh>` as flashinfer's sampling kernels do: the whole of
`<cub/cub.cuh>` cost 6 s more a probe and trips nothing more)
and cuRAND's `<curand_kernel.h>` (cutlass includes it in flashinfer's prefill)
is compiled with flashinfer's include order and `-gencode`, then linked
`-shared ... -lcudart -lcuda` like a JIT module. CCCL's includes are what
trip the nvcc/CUDART_VERSION check (a bare kernel does not); the link is what
needs the lib64 links; the NEEDED entries show whether libcuda.so.1 is really
recorded (a stub exporting nothing links, records nothing, fails at load).

Example (the probe prints through `pf_kv`, which `encode_lines` stands in for):
    >>> from pctfleet.facts.kv import encode_lines
    >>> parse_probe(encode_lines("probe_compile=ok\\nprobe_link=ok\\nneeded=libcudart.so.13"))
    ProbeResult(compile_ok=True, link_ok=True, needed=['libcudart.so.13'], log='')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pctfleet.cuda.facts import ENV_KEY
from pctfleet.cuda.rules import arch_parts
from pctfleet.facts.kv import decode_fields
from pctfleet.sh import q, snippet

PROBE_SOURCE = r"""// pctfleet compile probe: flashinfer's JIT includes and link line, in miniature.
#include <cuda/std/type_traits>
#include <cub/block/block_reduce.cuh>
#include <curand_kernel.h>
#include <cuda.h>
#include <cuda_runtime.h>

template <int kThreads>
__global__ void pctfleet_probe_sum(const int* in, int* out) {
  using Reduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  int total = Reduce(storage).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) {
    *out = cuda::std::is_integral<decltype(total)>::value ? total : -1;
  }
}

// Uses the driver API (-lcuda) and the runtime (-lcudart), as JIT modules do.
extern "C" int pctfleet_probe_launch(const int* in, int* out) {
  int driver = 0;
  if (cuDriverGetVersion(&driver) != CUDA_SUCCESS) return -1;
  pctfleet_probe_sum<32><<<1, 32>>>(in, out);
  return static_cast<int>(cudaGetLastError());
}
"""


@dataclass
class ProbeResult:
    compile_ok: bool
    link_ok: bool  # False also when the compile failed and the link never ran
    needed: list[str] = field(default_factory=list)
    log: str = ""  # the last 30 lines of compiler/linker output, on failure

    @property
    def records_libcuda(self) -> bool:
        """The module would load libcuda.so.1 (a symbol-less stub records nothing)."""
        return "libcuda.so.1" in self.needed


def gencode(arch: str) -> str:
    """'sm_120' -> -gencode=arch=compute_120,code=sm_120; '120f' keeps its suffix."""
    digits, suffix = arch_parts(arch)
    if not digits:
        raise ValueError(f"not a GPU architecture: {arch!r} (try sm_120, 120f, 12.0a)")
    return f"-gencode=arch=compute_{digits}{suffix},code=sm_{digits}{suffix}"


def compile_flags(cuda_home: str, arch: str, flashinfer_cccl: str | None) -> list[str]:
    """flashinfer's order: bundled CCCL first with -I, then -isystem $CUDA_HOME/include."""
    flags = []
    if flashinfer_cccl:
        for sub in ("libcudacxx/include", "cub", "thrust"):
            flags += ["-I", f"{flashinfer_cccl.rstrip('/')}/{sub}"]
    flags += ["-isystem", f"{cuda_home.rstrip('/')}/include", "-std=c++17"]
    flags += ["--expt-relaxed-constexpr", gencode(arch), "-Xcompiler", "-fPIC"]
    return flags


def probe_script(
    cuda_home: str,
    arch: str,
    flashinfer_cccl: str | None,
    workdir: str,
    *,
    env: Mapping[str, str] | None = None,
) -> str:
    """sh (dash-safe) that compiles and links the probe; exit 0 when both work.

    `env` is exported first so the compile sees what the server's would
    (CPATH, NVCC_*_FLAGS, CXX). Prints probe_compile, probe_link, needed and,
    on failure, probe_log (base64).
    """
    exports = "".join(_export(key, value) + "\n" for key, value in (env or {}).items())
    flags = compile_flags(cuda_home, arch, flashinfer_cccl)
    source = PROBE_SOURCE.rstrip("\n")
    return exports + snippet(
        "compile_probe", argv=flags, CH=cuda_home.rstrip("/"), W=workdir, SOURCE=source
    )


def _export(key: str, value: str) -> str:
    if not ENV_KEY.match(key):
        raise ValueError(f"not an environment variable name: {key!r}")
    return f"export {key}={q(value)}"


def parse_probe(text: str) -> ProbeResult:
    """Read `probe_script`'s output; a missing field means that step did not succeed."""
    fields = decode_fields(text)
    needed = [n for n in fields.get("needed", "").split(",") if n]
    return ProbeResult(
        compile_ok=fields.get("probe_compile") == "ok",
        link_ok=fields.get("probe_link") == "ok",
        needed=needed,
        log=fields.get("probe_log", ""),
    )
