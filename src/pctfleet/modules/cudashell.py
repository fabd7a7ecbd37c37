"""The CUDA preamble, for infra/ until its snippets load it from sh/ (sh/cuda_preamble.sh)."""

from __future__ import annotations

from typing import Any

from pctfleet.sh import snippet


def preamble(args: dict[str, Any]) -> str:
    """Sets $VENV and $CH (where the wheels will unpack when no toolkit is there yet)."""
    return snippet(
        "cuda_preamble", VENV=args.get("venv") or "/opt/sglang", CH_ARG=args.get("cuda_home") or ""
    )
