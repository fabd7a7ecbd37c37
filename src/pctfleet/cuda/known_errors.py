"""The doctor's table: compiler, linker and server messages, and what causes them.

`scan` reads a log (a JIT build, a server's stderr, a probe's output) and
names every known cause once, in the order it first shows up. The `rule`
of each entry is the `rules.py` check that would have caught it beforehand
("" where no single rule does).

Example:
    >>> [f.rule for f in scan("/usr/bin/ld: cannot find -lcudart: No such file")]
    ['links']
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from pctfleet.cuda.rules import EXTRAS, LINKS_FIX

MAX_LINE = 300
_PINNED = f'pip install "cuda-toolkit[{EXTRAS}]==<torch\'s version>" (never nvidia-cuda-nvcc alone)'
_CLEAR_CACHE = (
    "stop the server, then clear ~/.cache/flashinfer and ~/.cache/sglang/.cache/flashinfer"
)


@dataclass(frozen=True)
class KnownError:
    pattern: str  # a regex, searched in each line
    cause: str
    rule: str
    fix: str
    example: str = ""  # the message as a build prints it: what a broken rule will cause


@dataclass
class Finding:
    cause: str
    rule: str
    fix: str
    line: str  # the matching line, stripped, at most MAX_LINE characters
    lineno: int  # 1-based

    def to_dict(self) -> dict:
        return asdict(self)


KNOWN_ERRORS: list[KnownError] = [
    KnownError(
        r"Unsupported \.version \d+\.\d+; current version is '\d+\.\d+'",
        "cicc (nvidia-nvvm) is newer than ptxas: it writes PTX that ptxas cannot read",
        "nvcc-cicc",
        "reinstall the pinned set: " + _PINNED,
        "ptxas fatal   : Unsupported .version 9.2; current version is '9.0'",
    ),
    KnownError(
        r"CUDA compiler and CUDA toolkit headers are incompatible",
        "nvcc and the CUDART_VERSION of the cuda_runtime_api.h the compile found differ "
        "(nvidia-cuda-runtime from another release, or another CUDA include dir on the path)",
        "nvcc-cudart",
        "reinstall the pinned set and unset CPATH/NVCC_*_FLAGS: " + _PINNED,
        "cuda_toolkit.h:41:8: error: #error CUDA compiler and CUDA toolkit headers are "
        "incompatible, please check your include paths",
    ),
    KnownError(
        r"(cuda/std/\w+|cub/[\w/]+\.cuh|thrust/\w+\.h): No such file or directory"
        r"|cannot open source file \"(cuda/std/|cub/|thrust/)",
        "no CCCL headers: flashinfer 0.5.x bundles none and needs nvidia-cuda-cccl",
        "cccl-present",
        "install the toolkit with its cccl extra: " + _PINNED,
        "fatal error: cuda/std/type_traits: No such file or directory",
    ),
    KnownError(
        r"curand_kernel\.h: No such file or directory|cannot open source file \"curand_kernel\.h",
        "no cuRAND headers: cutlass's tensor_fill.h (flashinfer's prefill JIT) includes "
        "curand_kernel.h, and the toolkit was installed without nvidia-curand",
        "curand-headers",
        "install the toolkit with its curand extra: " + _PINNED,
        "tensor_fill.h:52:10: fatal error: curand_kernel.h: No such file or directory",
    ),
    KnownError(
        r"cannot find -lcudart\b",
        "no unversioned libcudart.so under $CUDA_HOME/lib64 (pip ships only libcudart.so.13)",
        "links",
        LINKS_FIX,
        "/usr/bin/ld: cannot find -lcudart: No such file or directory",
    ),
    KnownError(
        r"cannot find -lcuda(?![\w])",
        "no $CUDA_HOME/lib64/stubs/libcuda.so (no wheel ships libcuda: it is the driver's)",
        "links",
        LINKS_FIX,
    ),
    KnownError(
        r"unsupported GNU version! gcc versions later than \d+",
        "the host g++ is newer than this nvcc supports",
        "build-tools",
        "install a g++ this nvcc supports and point nvcc at it (NVCC_CCBIN=/usr/bin/g++-12)",
    ),
    KnownError(
        r"Failed to preprocess host compiler properties|cc1plus: not found"
        r"|No such file or directory: '(g\+\+|c\+\+)'",
        "no host C++ compiler: nvcc needs g++ in the container",
        "build-tools",
        "apt-get install -y g++",
    ),
    KnownError(
        r"Unsupported gpu architecture '(compute|sm)_\w+'",
        "this nvcc is too old for the GPU's architecture (SM120 needs CUDA >= 12.8)",
        "arch-supported",
        "install the toolkit torch pins (13.x lists compute_120): " + _PINNED,
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
    ),
    KnownError(
        r"Python\.h: No such file or directory",
        "no Python headers: flashinfer's JIT includes Python.h",
        "build-tools",
        "apt-get install -y python3-dev",
    ),
    KnownError(
        r"No such file or directory: 'ninja'|ninja: (command )?not found"
        r"|Ninja is required to load C\+\+ extensions",
        "ninja is not on the server's PATH (flashinfer runs plain `ninja`)",
        "build-tools",
        "apt-get install -y ninja-build (or put the venv's bin on the server's PATH)",
    ),
    KnownError(
        r"CUDA driver version is insufficient for CUDA runtime version",
        "the node's NVIDIA driver is older than the CUDA release torch uses (cu13 needs >= 580)",
        "driver",
        "upgrade the node's NVIDIA driver (nvidia-smi must report CUDA Version >= 13.0)",
        "CUDA driver version is insufficient for CUDA runtime version",
    ),
    KnownError(
        r"Failed to initialize NVML: Driver/library version mismatch",
        "the container's NVIDIA userspace libraries (libnvidia-ml, libcuda) are not the version "
        "of the node's loaded kernel module",
        "driver-match",
        "install the node's driver version in the container (--no-kernel-module), or bind-mount "
        "the node's libraries; on the node itself: reboot after a driver upgrade",
        "Failed to initialize NVML: Driver/library version mismatch",
    ),
    KnownError(
        r"no kernel image is available for execution on the device",
        "kernels were built for another GPU architecture (a stale JIT cache or a wrong arch)",
        "arch-supported",
        _CLEAR_CACHE + "; check FLASHINFER_CUDA_ARCH_LIST",
    ),
    KnownError(
        r"undefined symbol: cu[A-Z]\w*",
        "a JIT module was linked against a libcuda stub with no symbols: no NEEDED libcuda.so.1",
        "links",
        LINKS_FIX + " (stub -> the driver's libcuda.so.1), then clear the JIT cache",
    ),
    KnownError(
        r"undefined symbol: ",
        "a JIT module built by another toolchain or torch is being reused (stale JIT cache)",
        "",
        _CLEAR_CACHE,
    ),
    KnownError(
        r"Read timed out\. \(read timeout=\d{3,}|(?i:warm-? ?up\b.*\btimed? ?out)"
        r"|SGLANG_WARMUP_TIMEOUT(?!\s*=)",
        "the cold JIT compile took longer than SGLang's warm-up timeout (600 s by default)",
        "",
        "set SGLANG_WARMUP_TIMEOUT=1800 in the server's environment (or pre-build the JIT cache)",
    ),
    KnownError(
        r"Ninja build failed|ninja: build stopped|Error building extension",
        "a JIT build failed: the first compiler error above this line is the cause",
        "",
        "run: pctfleet doctor on this container (it runs the compile probe)",
    ),
    KnownError(
        r"virtual environment was not created successfully because ensurepip"
        r"|No module named ensurepip",
        "python3 -m venv without ensurepip: the container lacks Debian's python3-venv package",
        "",
        "apt-get install -y python3-venv (python3.X-venv for another python), "
        "then recreate the venv",
    ),
    KnownError(
        r"Initialization failed\. warmup error:",
        "SGLang's warm-up request failed: a JIT error or time-out earlier in the log",
        "",
        "read the findings above this one; run: pctfleet doctor on this container",
    ),
]

_COMPILED = [(entry, re.compile(entry.pattern)) for entry in KNOWN_ERRORS]


def scan(text: str) -> list[Finding]:
    """Every known cause in `text`, once each, in order of first appearance.

    A line counts for the first entry it matches only: the table runs from
    the specific to the generic, so `undefined symbol: cuInit` is a link
    problem and not also a stale cache.
    """
    findings: list[Finding] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        entry = _first_match(line)
        if entry is not None and entry.cause not in seen:
            seen.add(entry.cause)
            findings.append(_finding(entry, line, lineno))
    return findings


def _first_match(line: str) -> KnownError | None:
    return next((entry for entry, regex in _COMPILED if regex.search(line)), None)


def _finding(entry: KnownError, line: str, lineno: int) -> Finding:
    return Finding(entry.cause, entry.rule, entry.fix, line.strip()[:MAX_LINE], lineno)


def symptom(rule: str) -> KnownError | None:
    """The error a broken `rule` makes flashinfer's JIT print, where one is known."""
    return next((k for k in KNOWN_ERRORS if k.rule == rule and k.example), None)
