"""What a task module is: read facts in the shared probe, decide, emit a change.

A module never talks to the container itself. It contributes a shell snippet
to the container's single probe script, turns that snippet's output into a
decision (`Plan`), and, when something must change, hands the engine a script
to run (and files to push). This is what lets a converged container cost one
`pct exec` for a whole playbook.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import PlaybookError, brief


def q(value: object) -> str:
    """Quote one value for the container's shell. The only quoting helper."""
    return shlex.quote(str(value))


@dataclass
class Push:
    """A file the change writes: pushed atomically and verified by sha256."""

    dest: str
    content: bytes
    mode: str = "0644"
    owner: str = ""


@dataclass
class Plan:
    """A module's decision for one container."""

    changed: bool
    msg: str = ""
    script: str | None = None  # sh run in the container to apply the change
    pushes: list[Push] = field(default_factory=list)
    diff: dict | None = None  # {"before": str, "after": str, "path": str}
    failed: bool = False
    stdin: bytes = b""  # fed to the change script (Ansible's `command: stdin=`)
    skip_in_check: bool = False
    result: dict = field(default_factory=dict)


@dataclass
class Fact:
    """What one probe snippet printed, and its exit status."""

    output: str
    status: int

    def fields(self) -> dict[str, str]:
        """`key=value` lines as a dict (later lines win)."""
        pairs = (line.split("=", 1) for line in self.output.splitlines() if "=" in line)
        return {key: value for key, value in pairs}


class Module:
    """Base class: subclasses set `name`, `args` and implement `plan`."""

    name: ClassVar[str]
    args: ClassVar[set[str] | None] = None
    # Runs on the controller only (debug, set_fact): needs no probe and no remote call.
    controller: ClassVar[bool] = False

    def validate(self, args: dict[str, Any], where: str) -> None:
        """Reject bad argument values before anything runs anywhere."""

    def probe(self, args: dict[str, Any], want_diff: bool) -> str | None:
        """A sh snippet whose output `plan` reads, or None when no facts are needed."""
        return None

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        raise NotImplementedError

    def finish(self, args: dict[str, Any], plan: Plan, rc: int, out: str, err: str) -> dict:
        """The registered result after the change ran. Default: rc/stdout/stderr."""
        result = {"rc": rc, "stdout": out, "stderr": err, "stdout_lines": out.splitlines()}
        if rc != 0:
            result["failed"] = True
            result["msg"] = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
        return result


def words(value: object, key: str, where: str, module: str) -> list[str]:
    """`value` split like a shell line; unbalanced quotes are a PlaybookError."""
    try:
        return shlex.split(str(value))
    except ValueError as err:
        raise PlaybookError(
            f"{module}: {key!r} cannot be split into words ({err}): {brief(value)}", where=where
        ) from None


def number(args: dict, key: str, where: str, module: str, *, integer: bool = False) -> None:
    """A given `args[key]` must be a finite number >= 0 (a whole one if `integer`)."""
    value = args.get(key)
    if value is None:
        return
    try:
        parsed = int(value) if integer else float(value)
    except (TypeError, ValueError, OverflowError):
        parsed = -1
    if isinstance(value, bool) or not 0 <= parsed < float("inf"):
        kind = "a whole number" if integer else "a number"
        raise PlaybookError(
            f"{module}: {key!r} must be {kind} >= 0, got {brief(value)}", where=where
        )


def as_bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"yes", "true", "1", "on"}
    return bool(value)


def mode_string(value: object, where: str) -> str | None:
    """Normalise a mode (0644, '0644', '644', 420) to a 4-digit octal string."""
    if value is None:
        return None
    # YAML already read 0644 as octal; a bare 644 is decimal, as in Ansible.
    text = oct(value)[2:] if isinstance(value, int) else str(value).strip()
    text = text.removeprefix("0o")
    if not text.isdigit() or any(c in "89" for c in text) or int(text, 8) > 0o7777:
        raise PlaybookError(f"'mode' must be octal like '0644', got {value!r}", where=where)
    return text.zfill(4)
