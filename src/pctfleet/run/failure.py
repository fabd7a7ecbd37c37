"""Why a task failed: its exit code, the tails of its output and a known cause, if any.

A failed command's full output can be megabytes (a compiler log); the result
keeps the last lines only, redacted like every other text of the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TAIL_LINES = 20
TAIL_CHARS = 4000


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The last `lines` lines of `text`, at most `chars` characters of them."""
    kept = "\n".join(str(text).rstrip("\n").splitlines()[-lines:])
    return kept if len(kept) <= chars else "..." + kept[-(chars - 3) :]


def _ran(registered: dict[str, Any]) -> dict[str, Any]:
    """The registered result that ran a command: a looped task's first failed item."""
    if "rc" in registered:
        return registered
    failed = [r for r in registered.get("results") or [] if r.get("failed") and "rc" in r]
    return failed[0] if failed else {}


def failure_output(registered: dict[str, Any], hide: Callable[[str], str]) -> dict[str, Any]:
    """`rc`, `stdout` and `stderr` tails (each passed through `hide`) and the known
    `cause` ({cause, fix, line}) of a failed task; {} when it ran no command."""
    ran = _ran(registered)
    if not ran:
        return {}
    out = {
        "rc": ran.get("rc"),
        "stdout": hide(tail(ran.get("stdout") or "")),
        "stderr": hide(tail(ran.get("stderr") or "")),
    }
    # Only a failure needs the table (and the CUDA package it lives in): not at start-up.
    from pctfleet.cuda.known_errors import scan

    findings = scan(f"{out['stderr']}\n{out['stdout']}")
    if findings:
        out["cause"] = {k: findings[0].to_dict()[k] for k in ("cause", "fix", "line")}
    return out


def shown_tail(output: dict[str, Any]) -> tuple[str, str]:
    """The stream the text output shows: stderr's tail, or stdout's when stderr is empty."""
    if output.get("stderr"):
        return "stderr", output["stderr"]
    return "stdout", output.get("stdout") or ""
