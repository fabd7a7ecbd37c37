"""Run one tool as a child process and measure what it cost the controller.

Wall time, CPU time (user + system of the child and everything it waited
for, from wait4's rusage), the largest single process (ru_maxrss) and the
peak of the whole process tree's resident memory, sampled from /proc (an
Ansible run is a parent plus `forks` workers, so ru_maxrss alone would
understate it).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_EVERY = 0.1  # seconds between memory samples of the process tree


@dataclass
class Measured:
    """One measured run of a command."""

    argv: list[str]
    exit_code: int
    wall_s: float
    cpu_s: float
    maxrss_mb: float  # the largest single process
    peak_tree_mb: float  # all processes of the run together, sampled
    stdout: str = field(repr=False, default="")
    stderr: str = field(repr=False, default="")

    def summary(self) -> dict:
        data = asdict(self)
        data.pop("stdout")
        data.pop("stderr")
        return data


def _children() -> dict[int, list[int]]:
    """ppid -> pids, from one pass over /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * PAGE // 1024
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss_kb(root: int) -> int:
    """Resident memory of `root` and all its descendants, in KiB."""
    tree = _children()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_kb(pid)
        todo.extend(tree.get(pid, []))
    return total


class _Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak_kb = max(self.peak_kb, tree_rss_kb(self.pid))
            self.done.wait(SAMPLE_EVERY)


def measure(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 900.0,
) -> Measured:
    """Run argv to completion; stdout and stderr are kept (in files, so no pipe fills up)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd
        )
        sampler = _Sampler(proc.pid)
        sampler.start()
        code, usage = _wait(proc, started + timeout)
        wall = time.monotonic() - started
        sampler.done.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        return Measured(
            argv=list(argv),
            exit_code=code,
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            maxrss_mb=usage.ru_maxrss / 1024,
            peak_tree_mb=max(sampler.peak_kb, usage.ru_maxrss) / 1024,
            stdout=out.read().decode("utf-8", errors="replace"),
            stderr=err.read().decode("utf-8", errors="replace"),
        )


def _wait(proc: subprocess.Popen, deadline: float):  # noqa: ANN202 - os.wait4's struct_rusage
    """wait4 the child (its own rusage, not every child this process ever had); kill at deadline."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() > deadline:
            proc.kill()  # our own child, by its PID
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        time.sleep(0.02)
