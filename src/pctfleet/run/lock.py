"""One run changes a container at a time: a lock held inside the container.

Reading facts needs no lock, so a converged container still costs one call.
Before its first change a run takes the lock (a directory created atomically
in /run/pctfleet, with a holder file: run id, lease expiry, the pid of the
script working under it, and who). Every change script renews the lease; the
end of the run releases it. A holder whose lease expired and whose script is
gone (a run killed with SIGKILL, a controller that lost its network) is stale:
the next run takes the lock over, by renaming the directory away atomically.
"""

from __future__ import annotations

import re
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pctfleet.modules.base import q
from pctfleet.sh import library, snippet
from pctfleet.transport.base import RunResult, Target

BUSY = 75  # EX_TEMPFAIL: another live run holds the lock

SHELL = library(["lock"])

RELEASE = snippet("lock_release")


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class LockTimeout(Exception):
    """Another run kept the container's lock longer than we were willing to wait."""


@dataclass
class RunLock:
    target: Target
    run_id: str
    lease: float = 60.0  # how long a holder between two calls keeps the lock
    wait: float = 300.0  # how long to wait for another run's lock
    held: bool = False
    notify: Callable[[str], None] = field(default=to_stderr)  # what we wait for, said once

    @property
    def who(self) -> str:
        return f"{socket.gethostname()}"

    def prefix(self) -> str:
        """Sh that takes or renews the lock before a change script (exits 75 when busy)."""
        return SHELL + f"pctfleet_lock {q(self.run_id)} {int(self.lease)} {q(self.who)}\n"

    def wrap(self, script: str) -> str:
        """The change script under the lock; the lease restarts when it ends, however it ends."""
        renew = f"pctfleet_lease {q(self.run_id)} {int(self.lease)} 0 {q(self.who)}"
        return f"{self.prefix()}(\n{script}\n)\nrc=$?\n{renew}\nexit $rc\n"

    def acquire(self) -> bool:
        """Take the lock, waiting for another run if needed; True when we had to wait."""
        waited, deadline, pause = False, time.monotonic() + self.wait, 0.5
        told: str | None = None
        while True:
            result = self.target.run(["/bin/sh", "-c", self.prefix()], stdin=b"")
            if not busy(result):
                self.held = True
                return waited
            if time.monotonic() > deadline:
                raise LockTimeout(holder(result))
            told = self._tell(result, deadline, told)
            waited = True
            time.sleep(pause)
            pause = min(pause * 2, 5.0)

    def _tell(self, result: RunResult, deadline: float, told: str | None) -> str | None:
        """Say whose lock we wait for, once per holding run (a lease renewal is no news)."""
        found = BUSY_LINE.search(result.stderr.decode("utf-8", "replace"))
        run = found["run"] if found else ""
        if run != told:
            self.notify(waiting_message(self.target.name, result, deadline - time.monotonic()))
        return run

    def release(self) -> None:
        if self.held:
            self.target.run(["/bin/sh", "-c", RELEASE, "pctfleet-unlock", self.run_id], stdin=b"")
            self.held = False


def busy(result: RunResult) -> bool:
    return result.exit_code == BUSY and b"pctfleet-lock-busy" in result.stderr


def holder(result: RunResult) -> str:
    for line in result.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("pctfleet-lock-busy"):
            return "container is locked by " + line.removeprefix("pctfleet-lock-busy ").strip()
    return "container is locked by another run"


BUSY_LINE = re.compile(
    r"pctfleet-lock-busy run (?P<run>\S*) by (?P<who>.*?) \(lease until (?P<until>\d+), "
    r"pid (?P<pid>\d+)(?:, since (?P<since>\d+|\?))?\)"
)


def waiting_message(where: str, result: RunResult, left: float) -> str:
    """`node1/200: waiting for the lock of run R (from host, ...) ...`, for the operator."""
    found = BUSY_LINE.search(result.stderr.decode("utf-8", "replace"))
    if found is None:
        return f"{where}: waiting: {holder(result)}; giving up in {left:.0f}s"
    since = found["since"]
    held = f"held since {_clock(int(since))}, " if since and since.isdigit() else ""
    until = int(found["until"])
    return (
        f"{where}: waiting for the lock of run {found['run'] or '?'} "
        f"(from {found['who'] or 'unknown'}, pid {found['pid']} in the container): "
        f"{held}lease until {_clock(until)} ({until - time.time():+.0f}s); "
        f"giving up in {left:.0f}s"
    )


def _clock(epoch: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))
