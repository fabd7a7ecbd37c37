"""`pctfleet exec`: one command in many containers, in parallel."""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from pctfleet.run.scheduler import map_targets
from pctfleet.status import Status
from pctfleet.transport.base import Stdin, Target, TransportError


@dataclass
class ExecOutcome:
    container: str
    status: Status  # ok, failed or one of UNREACHED
    exit_code: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0
    reason: str = ""
    message: str = ""
    # Calls sent again because pct crashed before entering the container (see PctTarget).
    reruns: int = 0

    def as_json(self) -> dict:
        data = {
            "container": self.container,
            "node": self.container.split("/")[0],
            "ctid": int(self.container.split("/")[1]),
            "status": self.status,
            "reason": self.reason or self.status,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 3),
            "message": self.message,
            "remote_reruns": self.reruns,
        }
        for name in ("stdout", "stderr"):
            raw = getattr(self, name)
            try:
                data[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                data[name] = raw.decode("utf-8", errors="replace")
                data[f"{name}_base64"] = base64.b64encode(raw).decode()
        return data


class LinePrefixer:
    """A sink that writes whole lines to a shared stream, each prefixed with a label."""

    def __init__(self, label: str, stream: BinaryIO, lock: threading.Lock) -> None:
        self.prefix = f"{label} | ".encode()
        self.stream = stream
        self.lock = lock
        self.partial = b""

    def write(self, data: bytes) -> int:
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if lines:
            with self.lock:
                self.stream.write(b"".join(self.prefix + line + b"\n" for line in lines))
                self.stream.flush()
        return len(data)

    def close(self) -> None:
        if self.partial:
            self.write(b"\n")


@dataclass
class OutputPlan:
    """Where each container's output goes: memory (JSON), raw passthrough, or prefixed lines."""

    mode: str  # "collect" | "raw" | "prefix"
    stdout: BinaryIO | None = None
    stderr: BinaryIO | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def _run_one(target: Target, argv: Sequence[str], stdin: Stdin, plan: OutputPlan) -> ExecOutcome:
    out = err = None
    if plan.mode == "raw":
        out, err = plan.stdout, plan.stderr
    elif plan.mode == "prefix":
        out = LinePrefixer(target.name, plan.stdout, plan.lock)
        err = LinePrefixer(target.name, plan.stderr, plan.lock)
    before = target.reruns
    try:
        result = target.run(argv, stdin=stdin, stdout=out, stderr=err)
    except TransportError as exc:
        reruns = target.reruns - before
        return ExecOutcome(
            target.name, exc.status, reason=exc.reason, message=str(exc), reruns=reruns
        )
    finally:
        for sink in (out, err):
            if isinstance(sink, LinePrefixer):
                sink.close()
    status = Status.OK if result.ok else Status.FAILED
    outcome = ExecOutcome(
        target.name, status, result.exit_code, result.stdout, result.stderr, result.duration
    )
    outcome.reruns = target.reruns - before
    return outcome


def run_exec(
    targets: Sequence[Target],
    argv: Sequence[str],
    stdin: Stdin,
    plan: OutputPlan,
    forks: int | None = None,
) -> list[ExecOutcome]:
    """Run argv in every target: nodes side by side, each within its channel limit,
    at most `forks` at once when given; results in target order."""
    if len(targets) == 1:
        return [_run_one(targets[0], argv, stdin, plan)]
    return map_targets(targets, lambda target: _run_one(target, argv, stdin, plan), forks)
