"""Every CUDA toolchain fact of one container, read by one sh snippet.

The snippet runs inside the container (dash, stdin from /dev/null, stderr
discarded) and prints `key=value` lines through `pf_kv` (values encoded, so no
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
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from pctfleet.facts.kv import KV_FUNCTION, PY_KV, decode_pairs
from pctfleet.sh import library

# The wheels whose versions the rules compare (DOMAIN: section 2).
PIP_NAMES = (
    "cuda-toolkit",
    "nvidia-cuda-nvcc",
    "nvidia-nvvm",
    "nvidia-cuda-crt",
    "nvidia-cuda-runtime",
    "nvidia-cuda-cccl",
    "torch",
    "flashinfer-python",
    "sglang",
    "ninja",
)

# Variables that change which headers, flags or compilers a JIT compile sees.
ENV_NAMES = (
    "CPATH",
    "CPLUS_INCLUDE_PATH",
    "C_INCLUDE_PATH",
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "NVCC_CCBIN",
    "CCCL_DISABLE_CTK_COMPATIBILITY_CHECK",
    "CUDA_HOME",
    "CUDA_PATH",
    "FLASHINFER_NVCC",
    "FLASHINFER_EXTRA_CUDAFLAGS",
    "FLASHINFER_CUDA_ARCH_LIST",
    "CXX",
    "CC",
)

# The three paths flashinfer's link line needs (DOMAIN: section 4), seen
# through `lib64` because that is the folder flashinfer hard-codes.
LINK_PATHS = {
    "lib64": "lib64",
    "libcudart": "lib64/libcudart.so",
    "libcuda_stub": "lib64/stubs/libcuda.so",
}

ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NUMERIC = re.compile(r"^\d+(\.\d+)*$")

# The one way CUDA_HOME is found, in the container: the given path, else CUDA_HOME or
# CUDA_PATH of the environment the snippet runs in (flashinfer's own order; the server's
# env file is sourced first where it matters), else the venv's nvidia/cu13 folder (the
# pip CUDA 13 wheels unpack there). The venv's site-packages is globbed, and its own
# python is asked when the glob is not one folder: no Python version is assumed.
# Every function returns 0: change scripts run them under `set -e`.
CUDA_HOME_FUNCTION = library(["cuda_home"])

# The body is one raw string: what is written here is what dash reads.
# `t` bounds every tool call (a wedged driver can hang nvidia-smi forever).
# The python heredoc reads metadata only: importing torch takes seconds and
# wants GPU libraries, so torch.version.cuda is parsed from torch/version.py.
SNIPPET_BODY = r"""
t() { if command -v timeout >/dev/null 2>&1; then timeout 30 "$@"; else "$@"; fi; }
kv() { [ -n "$2" ] && pf_kv "$1" "$2"; return 0; }
one() { printf '%s' "$1" | tr '\n' ' '; }
rel() { sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p' | head -n 1; }
define() { sed -n "s/^#define[[:space:]]*$1[[:space:]]*\([0-9][0-9]*\).*/\1/p" "$2" | head -n 1; }
maxptx() { sed -n "s/.*current version is '\([0-9.]*\)'.*/\1/p" | head -n 1; }
cudahdrs() { [ -f "$1/cuda_runtime_api.h" ] || [ -f "$1/cuda_runtime.h" ] || [ -d "$1/cuda/std" ]; }
pctfleet_find_cuda_home "$V" "$CH"
kv venv "$V"
kv cuda_home "$CH"
[ -n "$CH" ] && kv cuda_home_from "$CH_FROM"
[ -n "$CH" ] && [ -d "$CH" ] && kv cuda_home_real "$(cd "$CH" && pwd -P)"
PY="$V/bin/python"
if [ -x "$PY" ]; then
"$PY" - <<'PCTFLEET_PY'
@PY_KV@
import importlib.metadata as m, os, re, sysconfig
for name in @PIP_NAMES@:
    try:
        pf_kv("pip." + name, m.version(name))
    except Exception:
        pass
try:
    dist = m.distribution("torch")
except Exception:
    dist = None
if dist is not None:
    for req in dist.requires or []:
        hit = re.match(r"\s*cuda[-_.]toolkit\s*(\[[^\]]*\])?\s*==\s*([0-9][^\s;,]*)", req, re.I)
        if hit:
            pf_kv("torch_requires_cuda_toolkit", hit.group(2))
            break
    try:
        with open(str(dist.locate_file("torch/version.py"))) as fh:
            text = fh.read()
        hit = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*(?:['\"]([^'\"]*)['\"]|None)", text, re.M)
        if hit:
            pf_kv("torch_cuda", hit.group(1) or "cpu")
    except OSError:
        pass
inc = sysconfig.get_paths().get("include") or ""
if inc:
    pf_kv("python_include", inc)
    if os.path.isfile(os.path.join(inc, "Python.h")):
        pf_kv("python_h", 1)
PCTFLEET_PY
fi
NVCC="$CH/bin/nvcc"
PTXAS="$CH/bin/ptxas"
if [ -n "$CH" ] && [ -x "$NVCC" ]; then
  kv nvcc_version "$(t "$NVCC" --version | rel)"
  kv gpu_archs "$(t "$NVCC" --list-gpu-arch | tr '\n' ',' | sed 's/,*$//')"
fi
if [ -n "$CH" ] && [ -x "$PTXAS" ]; then
  kv ptxas_version "$(t "$PTXAS" --version | rel)"
fi
TMP=$(mktemp -d 2>/dev/null)
if [ -n "$CH" ] && [ -n "$TMP" ] && [ -d "$TMP" ]; then
  # The PTX header names cicc's release: cicc has no --version of its own.
  printf '__global__ void pctfleet_k(int *p) { p[0] = 1; }\n' > "$TMP/k.cu"
  if [ -x "$NVCC" ] && t "$NVCC" -ptx -o "$TMP/k.ptx" "$TMP/k.cu" >/dev/null 2>&1; then
    kv cicc_release "$(grep '^// Cuda compilation tools' "$TMP/k.ptx" | rel)"
    kv ptx_version "$(sed -n 's/^\.version \([0-9.]*\).*/\1/p' "$TMP/k.ptx" | head -n 1)"
  elif [ -f "$CH/nvvm/bin/cicc" ]; then
    # No host compiler, so no PTX: the same release string is in the binary.
    cicc_s='Cuda compilation tools, release [0-9.]*, V[0-9.]*'
    kv cicc_release "$(grep -a -o -m 1 "$cicc_s" "$CH/nvvm/bin/cicc" | rel)"
    pf_kv cicc_release_from binary
  fi
  if [ -x "$PTXAS" ]; then
    printf '.version 99.9\n.target sm_90\n.address_size 64\n' > "$TMP/v.ptx"
    kv ptxas_max_ptx "$(t "$PTXAS" -arch=sm_90 -o "$TMP/v.o" "$TMP/v.ptx" 2>&1 | maxptx)"
  fi
fi
[ -n "$TMP" ] && rm -rf "$TMP"
H="$CH/include/cuda_runtime_api.h"
if [ -n "$CH" ] && [ -f "$H" ]; then
  kv cudart_header "$H"
  cv=$(define CUDART_VERSION "$H")
  [ -n "$cv" ] && kv cudart_version "$((cv / 1000)).$((cv % 1000 / 10))"
fi
CHI=
[ -n "$CH" ] && [ -d "$CH/include" ] && CHI=$(cd "$CH/include" && pwd -P)
stray() {
  [ -n "$2" ] && [ -d "$2" ] || return 0
  if cudahdrs "$2" || [ -d "$2/cub" ]; then
    sr=$(cd "$2" && pwd -P)
    case "$sr" in "$CHI"|"$CHI/cccl") return 0 ;; esac
    pf_kv stray_include "$1:$2"
  fi
}
pathlist() {
  pl_rest=$2
  while [ -n "$pl_rest" ]; do
    pl_dir=${pl_rest%%:*}
    case "$pl_rest" in *:*) pl_rest=${pl_rest#*:} ;; *) pl_rest= ;; esac
    stray "$1" "$pl_dir"
  done
}
flagdirs() {
  fd_next=
  set -f
  for fd_w in $2; do
    if [ -n "$fd_next" ]; then stray "$1" "$fd_w"; fd_next=; continue; fi
    case "$fd_w" in
      -I|-isystem|-idirafter|--include-path|--system-include) fd_next=1 ;;
      --include-path=*|--system-include=*) stray "$1" "${fd_w#*=}" ;;
      -isystem*) stray "$1" "${fd_w#-isystem}" ;;
      -I*) stray "$1" "${fd_w#-I}" ;;
    esac
  done
  set +f
}
pathlist CPATH "${CPATH:-}"
pathlist CPLUS_INCLUDE_PATH "${CPLUS_INCLUDE_PATH:-}"
pathlist C_INCLUDE_PATH "${C_INCLUDE_PATH:-}"
flagdirs NVCC_PREPEND_FLAGS "${NVCC_PREPEND_FLAGS:-}"
flagdirs NVCC_APPEND_FLAGS "${NVCC_APPEND_FLAGS:-}"
flagdirs FLASHINFER_EXTRA_CUDAFLAGS "${FLASHINFER_EXTRA_CUDAFLAGS:-}"
for ev in @ENV_NAMES@; do
  eval "ev_set=\${$ev+x}"
  eval "ev_val=\${$ev-}"
  [ -n "$ev_set" ] && pf_kv "env.$ev" "$(one "$ev_val")"
done
cccl_ver() {
  cc_v=$(define CCCL_VERSION "$1")
  [ -n "$cc_v" ] && echo "$((cc_v / 1000000)).$((cc_v / 1000 % 1000)).$((cc_v % 1000))"
}
for cc_f in "$CH/include/cccl/cuda/std/__cccl/version.h" "$CH/include/cuda/std/__cccl/version.h"; do
  if [ -n "$CH" ] && [ -f "$cc_f" ]; then kv cccl_version "$(cccl_ver "$cc_f")"; break; fi
done
FI_TAIL=libcudacxx/include/cuda/std/__cccl/version.h
cc_f="$(pctfleet_site "$V")/flashinfer/data/cccl/$FI_TAIL"
if [ -f "$cc_f" ]; then
    kv flashinfer_cccl_version "$(cccl_ver "$cc_f")"
    kv flashinfer_cccl "${cc_f%/$FI_TAIL}"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  pf_kv nvidia_smi 1
  q=$(t nvidia-smi --query-gpu=compute_cap,driver_version,name --format=csv,noheader)
  q1=$(printf '%s\n' "$q" | head -n 1)
  kv gpu_cc "$(printf '%s' "$q1" | cut -d, -f1 | tr -d ' ')"
  kv driver_version "$(printf '%s' "$q1" | cut -d, -f2 | tr -d ' ')"
  kv gpu_name "$(printf '%s' "$q1" | cut -d, -f3- | sed 's/^ *//')"
  kv gpu_count "$(printf '%s\n' "$q" | grep -c '^[0-9]')"
  kv driver_cuda "$(t nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
fi
if command -v ldconfig >/dev/null 2>&1; then
  lc=$(ldconfig -p | sed -n 's/^[[:space:]]*libcuda\.so\.1 (\([^)]*\)) => \(.*\)$/\1|\2/p')
  lc1=$(printf '%s\n' "$lc" | grep '64|' | head -n 1)
  [ -n "$lc1" ] || lc1=$(printf '%s\n' "$lc" | head -n 1)
  [ -n "$lc1" ] && kv libcuda "${lc1#*|}"
fi
if [ -n "$CH" ]; then
  for lk in @LINKS@; do
    lk_name=${lk%%=*}
    lk_path="$CH/${lk#*=}"
    [ -L "$lk_path" ] && kv "link.$lk_name" "$(readlink "$lk_path")"
    [ -e "$lk_path" ] && pf_kv "exists.$lk_name" 1
  done
fi
kv gxx_version "$(g++ -dumpfullversion 2>/dev/null || g++ -dumpversion 2>/dev/null)"
kv cxx "$(command -v "${CXX:-c++}")"
if command -v ninja >/dev/null 2>&1; then
  kv ninja_version "$(ninja --version)"
  kv ninja_path "$(command -v ninja)"
  pf_kv ninja_on_path 1
elif [ -x "$V/bin/ninja" ]; then
  kv ninja_version "$("$V/bin/ninja" --version)"
  kv ninja_path "$V/bin/ninja"
fi
"""


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
    venv: str, cuda_home: str | None = None, env: Mapping[str, str] | None = None
) -> str:
    """The sh snippet that prints every toolchain fact as `key=value` lines.

    `env` holds the assignments the server runs with (CPATH, NVCC_*_FLAGS,
    PATH...): they are exported first so the facts are the server's. When
    `cuda_home` is None, CUDA_HOME or CUDA_PATH from that environment is used
    (as flashinfer does), else the venv's `nvidia/cu13` folder (where the pip
    wheels unpack).
    """
    lines = [_export(key, value) for key, value in (env or {}).items()]
    lines += [f"V={shlex.quote(venv.rstrip('/') or '/')}", f"CH={shlex.quote(cuda_home or '')}"]
    links = " ".join(shlex.quote(f"{k}={v}") for k, v in LINK_PATHS.items())
    body = (
        SNIPPET_BODY.replace("@PIP_NAMES@", repr(PIP_NAMES))
        .replace("@PY_KV@", PY_KV)
        .replace("@ENV_NAMES@", " ".join(ENV_NAMES))
        .replace("@LINKS@", links)
    )
    return KV_FUNCTION + CUDA_HOME_FUNCTION + "\n".join(lines) + body


def _export(key: str, value: str) -> str:
    if not ENV_KEY.match(key):
        raise ValueError(f"not an environment variable name: {key!r}")
    return f"export {key}={shlex.quote(str(value))}"


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
