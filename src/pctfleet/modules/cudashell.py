"""Shell pieces shared by the CUDA modules: where the toolkit lives, what identifies it."""

from __future__ import annotations

from typing import Any

from pctfleet.modules.base import q
from pctfleet.sh import library

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
        library(["cuda_home", "toolchain_id"])
        + f'VENV={venv}\npctfleet_find_cuda_home "$VENV" {explicit}\n'
        + NOT_YET
    )
