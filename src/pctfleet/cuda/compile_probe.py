"""The compile probe: flashinfer's JIT build in miniature, in seconds, without a GPU.

A tiny `.cu` that includes CCCL (`<cuda/std/type_traits>`, `<cub/cub.cuh>`)
is compiled with flashinfer's include order and `-gencode`, then linked
`-shared ... -lcudart -lcuda` like a JIT module. CCCL's includes are what
trip the nvcc/CUDART_VERSION check (a bare kernel does not); the link is what
needs the lib64 links; the NEEDED entries show whether libcuda.so.1 is really
recorded (a stub exporting nothing links, records nothing, fails at load).

Example:
    >>> parse_probe("probe_compile=ok\\nprobe_link=ok\\nneeded=libcudart.so.13,libc.so.6\\n")
    ProbeResult(compile_ok=True, link_ok=True, needed=['libcudart.so.13', 'libc.so.6'], log='')
"""

from __future__ import annotations

import base64
import binascii
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from pctfleet.cuda.facts import ENV_KEY
from pctfleet.cuda.rules import arch_parts

PROBE_SOURCE = r"""// pctfleet compile probe: flashinfer's JIT includes and link line, in miniature.
#include <cuda/std/type_traits>
#include <cub/cub.cuh>
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

# Written by the script: `t` bounds each step, `fail` reports and exits.
# The temp folder goes with the EXIT trap, also when a step is killed.
_HELPERS = r"""
t() { if command -v timeout >/dev/null 2>&1; then timeout 600 "$@"; else "$@"; fi; }
logtail() { tail -n 30 "$D/log" | base64 -w0; echo; }
needed() {
  if command -v readelf >/dev/null 2>&1; then
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'
  elif command -v objdump >/dev/null 2>&1; then
    objdump -p "$1" | sed -n 's/^ *NEEDED *//p'
  fi
}
"""

_COMPILE = r"""
if t "$NVCC" @FLAGS@ -c "$D/probe.cu" -o "$D/probe.o" >"$D/log" 2>&1; then
  echo "probe_compile=ok"
else
  echo "probe_compile=failed"
  echo "probe_link=skipped"
  printf 'probe_log=%s' "$(logtail)"
  exit 1
fi
LD=$(command -v "${CXX:-c++}" || command -v g++ || echo "$NVCC")
echo "probe_linker=$LD"
if t "$LD" "$D/probe.o" -shared -L"$CH/lib64" -L"$CH/lib64/stubs" -lcudart -lcuda \
    -o "$D/probe.so" >>"$D/log" 2>&1; then
  echo "probe_link=ok"
  echo "needed=$(needed "$D/probe.so" | tr '\n' ',' | sed 's/,*$//')"
  exit 0
fi
echo "probe_link=failed"
printf 'probe_log=%s' "$(logtail)"
exit 1
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
    flags = " ".join(shlex.quote(f) for f in compile_flags(cuda_home, arch, flashinfer_cccl))
    lines = [_export(key, value) for key, value in (env or {}).items()]
    lines += [
        f"CH={shlex.quote(cuda_home.rstrip('/'))}",
        'NVCC="$CH/bin/nvcc"',
        f"W={shlex.quote(workdir)}",
        _HELPERS,
        'mkdir -p "$W" && D=$(mktemp -d "$W/pctfleet-probe.XXXXXX") || D=',
        'if [ -z "$D" ]; then echo "probe_compile=failed"; echo "probe_link=skipped"; exit 1; fi',
        "trap 'rm -rf \"$D\"' EXIT",
        "trap 'exit 1' INT TERM HUP",
        "cat >\"$D/probe.cu\" <<'PCTFLEET_PROBE_CU'",
        PROBE_SOURCE.rstrip("\n"),
        "PCTFLEET_PROBE_CU",
        _COMPILE.replace("@FLAGS@", flags),
    ]
    return "\n".join(lines)


def _export(key: str, value: str) -> str:
    if not ENV_KEY.match(key):
        raise ValueError(f"not an environment variable name: {key!r}")
    return f"export {key}={shlex.quote(str(value))}"


def parse_probe(text: str) -> ProbeResult:
    """Read `probe_script`'s output; a missing line means that step did not succeed."""
    fields = dict(line.partition("=")[::2] for line in text.splitlines() if "=" in line)
    needed = [n for n in fields.get("needed", "").split(",") if n]
    return ProbeResult(
        compile_ok=fields.get("probe_compile") == "ok",
        link_ok=fields.get("probe_link") == "ok",
        needed=needed,
        log=_decode(fields.get("probe_log", "")),
    )


def _decode(text: str) -> str:
    try:
        return base64.b64decode(text.strip(), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return text
