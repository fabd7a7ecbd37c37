"""Every CUDA toolchain fact of one container, read by one sh snippet.

The snippet runs inside the container (dash, stdin from /dev/null, stderr
discarded) and prints `key=value` lines through `pf_kv` (values plain or encoded, so no
file the container holds can add a key); `parse_toolchain` turns them into a
typed `ToolchainFacts`. It never fails: a fact that cannot be read is simply
not printed, and the rules treat it as unknown.

Example:
    >>> facts = parse_toolchain(encode_lines("nvcc_version=13.0.88\\npip.torch=2.11.0"))
    >>> facts.nvcc_version, facts.versions["torch"]
    ('13.0.88', '2.11.0')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pctfleet.facts.kv import decode_pairs
from pctfleet.sh import snippet

# The wheels whose versions the rules compare (DOMAIN: section 2).
PIP_NAMES = (
    "cuda-toolkit",
    "nvidia-cuda-nvcc",
    "nvidia-nvvm",
    "nvidia-cuda-crt",
    "nvidia-cuda-runtime",
    "nvidia-cuda-cccl",
    "nvidia-curand",
    "torch",
    "flashinfer-python",
    "sglang",
    "ninja",
)

ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NUMERIC = re.compile(r"^\d+(\.\d+)*$")


@dataclass
class ToolchainFacts:
    """What `toolchain_snippet` found; None means "could not be read"."""

    venv: str | None = None
    cuda_home: str | None = None
    cuda_home_real: str | None = None
    cuda_home_from: str | None = None  # "argument", "env" (CUDA_HOME/CUDA_PATH) or "venv"
    versions: dict[str, str] = field(default_factory=dict)
    torch_requires_cuda_toolkit: str | None = None
    torch_cuda: str | None = None  # "cpu" for a CPU-only torch
    nvcc_version: str | None = None
    ptxas_version: str | None = None
    cicc_release: str | None = None
    cicc_release_from: str | None = None  # "binary" when no PTX could be made
    ptx_version: str | None = None
    ptxas_max_ptx: str | None = None
    cudart_version: str | None = None
    cudart_header: str | None = None
    stray_includes: list[str] = field(default_factory=list)
    stray_origins: dict[str, str] = field(default_factory=dict)  # dir -> variable
    env: dict[str, str] = field(default_factory=dict)
    cccl_version: str | None = None
    flashinfer_cccl_version: str | None = None
    flashinfer_cccl: str | None = None
    gpu_archs: list[str] = field(default_factory=list)
    nvidia_smi: bool = False
    gpu_cc: str | None = None
    gpu_name: str | None = None
    gpu_count: int | None = None
    driver_version: str | None = None
    driver_cuda: str | None = None
    libcuda: str | None = None
    links: dict[str, str] = field(default_factory=dict)
    exists: set[str] = field(default_factory=set)
    gxx_version: str | None = None
    cxx: str | None = None
    ninja_version: str | None = None
    ninja_path: str | None = None
    ninja_on_path: bool = False  # flashinfer runs plain `ninja`: only PATH counts
    python_include: str | None = None
    python_h: bool = False
    raw: dict[str, str] = field(default_factory=dict)

    @property
    def gpu_visible(self) -> bool:
        return self.gpu_cc is not None or self.driver_cuda is not None


def toolchain_snippet(
    venv: str,
    cuda_home: str | None = None,
    env: Mapping[str, str] | None = None,
    env_file: str | None = None,
) -> str:
    """The sh snippet (sh/toolchain.sh) that prints every toolchain fact as `key=value` lines.

    `env_file` (the server's environment file) is sourced first, then `env`, the
    assignments the server runs with (CPATH, NVCC_*_FLAGS, PATH...), is exported: the
    facts are the server's. When `cuda_home` is None, CUDA_HOME or CUDA_PATH from that
    environment is used (as flashinfer does), else the venv's `nvidia/cu13` folder (where
    the pip wheels unpack).
    """
    bad = [key for key in env or {} if not ENV_KEY.match(key)]
    if bad:
        raise ValueError(f"not an environment variable name: {bad[0]!r}")
    return snippet(
        "toolchain",
        argv=[f"{key}={value}" for key, value in (env or {}).items()],
        PCTFLEET_ENV_FILE=env_file or "",
        PCTFLEET_VENV=venv.rstrip("/") or "/",
        PCTFLEET_CUDA_HOME=cuda_home or "",
        PCTFLEET_PIP_NAMES=" ".join(PIP_NAMES),
    )


def parse_toolchain(text: str) -> ToolchainFacts:
    """Turn the snippet's output back into typed facts (unknown keys kept in `raw`)."""
    facts = ToolchainFacts()
    for key, value in decode_pairs(text):
        key, value = key.strip(), value.strip()
        # An env var set to "" is still set (and still matters).
        if key and (value or key.startswith("env.")):
            facts.raw[key] = value
            _apply(facts, key, value)
    return facts


# Keys whose values must look like versions; anything else (an error
# message where a number was expected) is dropped rather than trusted.
_NUMERIC_KEYS = {
    "nvcc_version",
    "ptxas_version",
    "cicc_release",
    "ptx_version",
    "ptxas_max_ptx",
    "cudart_version",
    "cccl_version",
    "flashinfer_cccl_version",
    "gpu_cc",
    "driver_version",
    "driver_cuda",
    "torch_requires_cuda_toolkit",
}
_TEXT_KEYS = {
    "venv",
    "cuda_home",
    "cuda_home_real",
    "cuda_home_from",
    "torch_cuda",
    "cicc_release_from",
    "cudart_header",
    "flashinfer_cccl",
    "gpu_name",
    "libcuda",
    "gxx_version",
    "cxx",
    "ninja_version",
    "ninja_path",
    "python_include",
}


def _apply(facts: ToolchainFacts, key: str, value: str) -> None:
    prefix, _, name = key.partition(".")
    if name and prefix in ("pip", "env", "link", "exists"):
        _apply_dotted(facts, prefix, name, value)
    elif key in _NUMERIC_KEYS:
        if NUMERIC.match(value):
            setattr(facts, key, value)
    elif key in _TEXT_KEYS:
        setattr(facts, key, value)
    elif key == "stray_include":
        origin, _, path = value.partition(":")
        facts.stray_includes.append(path)
        facts.stray_origins[path] = origin
    elif key == "gpu_archs":
        facts.gpu_archs = [a for a in value.split(",") if a]
    elif key in ("nvidia_smi", "python_h", "ninja_on_path"):
        setattr(facts, key, value == "1")
    elif key == "gpu_count" and value.isdigit():
        facts.gpu_count = int(value)


def _apply_dotted(facts: ToolchainFacts, prefix: str, name: str, value: str) -> None:
    if prefix == "pip":
        facts.versions[name] = value
    elif prefix == "env":
        facts.env[name] = value
    elif prefix == "link":
        facts.links[name] = value
    elif value == "1":
        facts.exists.add(name)


def version_tuple(version: str | None) -> tuple[int, ...]:
    """'13.0.88' -> (13, 0, 88); the leading numeric part only; () when none."""
    match = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def major_minor(version: str | None) -> str | None:
    """'13.0.88' -> '13.0'; None when the version has no minor part."""
    parts = version_tuple(version)
    return f"{parts[0]}.{parts[1]}" if len(parts) >= 2 else None
