"""Shell pieces shared by the CUDA modules: where the toolkit lives, what identifies it."""

from __future__ import annotations

from typing import Any

from .base import q

# The pip CUDA 13 wheels unpack into site-packages/nvidia/cu13, which works as CUDA_HOME.
CUDA_HOME_FUNCTION = r"""
pctfleet_cuda_home() {  # venv [explicit]
  if [ -n "$2" ]; then echo "$2"; return; fi
  for d in "$1"/lib/python3*/site-packages/nvidia/cu13; do
    [ -d "$d" ] && { echo "$d"; return; }
  done
  echo "$1/lib/python3/site-packages/nvidia/cu13"
}
pctfleet_site() {  # venv
  for d in "$1"/lib/python3*/site-packages; do [ -d "$d" ] && { echo "$d"; return; }; done
}
"""

# What a JIT cache was built against: the toolchain's wheels, its links and its CCCL tree.
# Any change here makes flashinfer's cached objects suspect (its cache key has no version).
TOOLCHAIN_ID_FUNCTION = r"""
pctfleet_toolchain_id() {  # venv cuda_home
  site=$(pctfleet_site "$1")
  {
    ls -d "$site"/cuda_toolkit-*.dist-info "$site"/nvidia_cuda_*.dist-info \
      "$site"/nvidia_nvvm-*.dist-info 2>/dev/null | sed 's|.*/||' | LC_ALL=C sort
    for l in lib64 lib/libcudart.so lib/stubs/libcuda.so; do
      printf '%s -> %s\n' "$l" "$(readlink "$2/$l" 2>/dev/null)"
    done
    cat "$2/include/cccl/.pctfleet-overlay.json" 2>/dev/null
  } | sha256sum | cut -c1-16
}
"""


def cuda_home_args(args: dict[str, Any]) -> tuple[str, str]:
    """(venv, explicit cuda_home or '') as quoted shell words."""
    return q(args.get("venv") or "/opt/sglang"), q(args.get("cuda_home") or "")


def preamble(args: dict[str, Any]) -> str:
    """Defines the functions above and sets $VENV and $CH for the rest of a script."""
    venv, explicit = cuda_home_args(args)
    return (
        CUDA_HOME_FUNCTION
        + TOOLCHAIN_ID_FUNCTION
        + f'VENV={venv}\nCH=$(pctfleet_cuda_home "$VENV" {explicit})\n'
    )
