"""What every transport returns or raises: results, typed outcomes, the Target interface.

Outcomes are never blurred: a node we cannot reach is not a container that is
missing, and neither is a command that failed. Each failure is its own
exception type carrying a stable `reason` string used in JSON and journals.
"""

from __future__ import annotations

import abc
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from pctfleet.status import UNREACHED

Stdin = bytes | BinaryIO | None
# How much of a stream moves at once.
CHUNK = 64 * 1024
# How `run_script` starts a shell that reads its script from stdin.
SCRIPT_ARGV = ("/bin/sh", "-s", "--")


@dataclass
class RunResult:
    """A command that ran to completion inside its target (any exit code)."""

    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")


class TransportError(Exception):
    """A command could not be run to completion. `reason` is a stable name.

    Each outcome below is one line: its `reason`, and the coarse `status` a run
    recap counts it under (one of UNREACHED, or "failed").
    """

    reason = "error"
    status = "failed"

    def __init_subclass__(cls, reason: str = "", status: str = "", **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.reason = reason or cls.reason
        cls.status = status or cls.status
        if cls.status not in (*UNREACHED, "failed"):
            raise TypeError(f"{cls.__name__}: unknown status {cls.status!r}")

    def __init__(self, where: str, message: str, hint: str = "") -> None:
        self.where = where
        self.message = message
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text


class NodeUnreachable(TransportError, reason="unreachable", status="unreachable"): ...


class AuthFailed(TransportError, reason="auth-failed", status="unreachable"): ...


class HostKeyUnknown(TransportError, reason="hostkey-unknown", status="unreachable"): ...


class HostKeyChanged(TransportError, reason="hostkey-changed", status="unreachable"): ...


class SudoPasswordRequired(TransportError, reason="sudo-password", status="unreachable"): ...


class ContainerMissing(TransportError, reason="ct-missing", status="ct-missing"): ...


class ContainerStopped(TransportError, reason="ct-stopped", status="ct-stopped"): ...


class CommandTimeout(TransportError, reason="timeout", status="timeout"): ...


class PctError(TransportError, reason="pct-error", status="failed"):
    """pct itself failed for a reason we do not classify further."""


class TransferError(TransportError, reason="transfer-failed", status="failed"): ...


@dataclass
class Sinks:
    """Where a command's output goes: caller-provided streams, or memory."""

    stdout: BinaryIO | None = None
    stderr: BinaryIO | None = None
    _out: io.BytesIO = field(default_factory=io.BytesIO)
    _err: io.BytesIO = field(default_factory=io.BytesIO)

    def out(self) -> BinaryIO:
        return self.stdout if self.stdout is not None else self._out

    def err(self) -> BinaryIO:
        return self.stderr if self.stderr is not None else self._err

    def result(self, exit_code: int, duration: float) -> RunResult:
        return RunResult(exit_code, self._out.getvalue(), self._err.getvalue(), duration)


class Target(abc.ABC):
    """Something commands run in: a container behind a node, or this machine.

    `run` is the one way in; a backend supplies only `_run`, the raw call that
    moves stdin in and output into the sinks.
    """

    name: str
    calls: int = 0
    # Calls sent again because they died before the command started (nothing ran).
    reruns: int = 0

    @property
    def node_key(self) -> str:
        """Targets with the same key share a node and its channel limit."""
        return self.name

    @property
    def session_limit(self) -> int:
        """How many commands this target's node takes at once (sshd's MaxSessions)."""
        return 10

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: Stdin = None,
        timeout: float | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
        read_only: bool = False,
    ) -> RunResult:
        """Run argv (no shell) and return its result; raise TransportError subclasses.
        `read_only`: the command changes nothing, so the transport may run it twice
        (it then starts sooner: transport/preopen.py)."""
        if not argv:
            raise ValueError("empty command")
        self.calls += 1
        sinks = Sinks(stdout, stderr)
        code, duration = self._run(list(argv), stdin, timeout, sinks, read_only=read_only)
        return sinks.result(code, duration)

    @abc.abstractmethod
    def _run(
        self,
        argv: list[str],
        stdin: Stdin,
        timeout: float | None,
        sinks: Sinks,
        *,
        read_only: bool = False,
    ) -> tuple[int, float]:
        """Run argv writing output to `sinks`; return (exit code, seconds taken)."""

    def run_script(
        self,
        script: str,
        args: Sequence[str] = (),
        *,
        timeout: float | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
        read_only: bool = False,
    ) -> RunResult:
        """Run a POSIX sh script sent on stdin, so no quoting nests in argv.

        >>> target.run_script('echo "$1"', ["a b; c"])   # prints: a b; c
        """
        argv = [*SCRIPT_ARGV, *args]
        return self.run(
            argv,
            stdin=script.encode(),
            timeout=timeout,
            stdout=stdout,
            stderr=stderr,
            read_only=read_only,
        )


def replayable(stdin: Stdin) -> bool:
    """Whether stdin can be sent again: bytes (or none) can; a stream may have been
    partly read by the call before."""
    return stdin is None or isinstance(stdin, bytes | bytearray)


def stdin_chunks(stdin: Stdin) -> Iterator[bytes]:
    """A command's stdin as the pieces to send, read as they are needed."""
    if isinstance(stdin, bytes | bytearray):
        yield stdin
    elif stdin is not None:
        while chunk := stdin.read(CHUNK):
            yield chunk
