"""Shell pieces shared by the CUDA modules: where the toolkit lives, what identifies it."""

from __future__ import annotations

from typing import Any

from pctfleet.cuda.facts import CUDA_HOME_FUNCTION
from pctfleet.modules.base import q

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


NOT_YET = """if [ -z "$CH" ]; then
  CH=$(pctfleet_site "$VENV"); CH="${CH:-$VENV/lib/python3/site-packages}/nvidia/cu13"
fi
"""


def cuda_home_args(args: dict[str, Any]) -> tuple[str, str]:
    """(venv, explicit cuda_home or '') as quoted shell words."""
    return q(args.get("venv") or "/opt/sglang"), q(args.get("cuda_home") or "")


def preamble(args: dict[str, Any]) -> str:
    """Defines the functions above and sets $VENV and $CH for the rest of a script.

    With no toolkit installed yet $CH is where the wheels will unpack (never ''):
    a change script must not write below /include.
    """
    venv, explicit = cuda_home_args(args)
    return (
        CUDA_HOME_FUNCTION
        + TOOLCHAIN_ID_FUNCTION
        + f'VENV={venv}\npctfleet_find_cuda_home "$VENV" {explicit}\n'
        + NOT_YET
    )
