"""Helpers for the fault and security suites: their own lab, the CLI, a view into containers.

The suites break nodes and containers on purpose, so they use a lab of their
own (127.0.13.x, /var/lib/pctfleet-lab-faults) and never touch the shared one.
Looking into a container does not go through the product (its sshd may be
down on purpose): `ct_sh` uses lxc-attach on this host, `ct_root` the
container's root as its PID 1 sees it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pctfleet.lab import Lab
from pctfleet.lab.system import attach
from pctfleet.run.journal import read as read_journal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reliability import scenario  # noqa: E402

STATE_DIR = Path("/var/lib/pctfleet-lab-faults")
ADDRESS_BASE = "127.0.13"
NO_SSHD = f"{ADDRESS_BASE}.99"  # nothing listens here: a connection attempt is "unreachable"
KEYS = ["node1/200", "node1/201", "node2/200", "node2/201"]
CT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

__all__ = ["KEYS", "NO_SSHD", "FaultLab", "read_journal", "scenario"]


class FaultLab:
    """The suite's lab plus ways to look inside it and to drive the CLI."""

    def __init__(self) -> None:
        self.lab = Lab(STATE_DIR, address_base=ADDRESS_BASE)

    def up(self) -> FaultLab:
        """Every node's sshd and every container running (undoes an earlier test's fault)."""
        self.lab.up(nodes=2, containers=2)
        return self

    @property
    def inventory(self) -> str:
        return str(self.lab.inventory)

    # -- the product --------------------------------------------------------

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pctfleet", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "pctfleet", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, book: Path, *more: str, journal: Path, timeout: float = 300):
        """`pctfleet run` on this lab: (exit code, JSON document or None, stderr)."""
        proc = self.cli(
            "run", str(book), "-i", self.inventory, "--journal-dir", str(journal), "--json",
            *more, timeout=timeout,
        )  # fmt: skip
        document = json.loads(proc.stdout) if proc.stdout.strip() else None
        return proc.returncode, document, proc.stderr

    # -- inside containers, without the product -------------------------------

    def lxc_name(self, key: str) -> str:
        node, ctid = key.split("/")
        return f"pctfleet-n{node.removeprefix('node')}-{ctid}"

    def ct_sh(self, key: str, script: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run sh in a container with lxc-attach (no SSH, no pct)."""
        return attach(
            ["lxc-attach", "-n", self.lxc_name(key), "-P", str(self.lab.lxcpath),
             "--clear-env", "--set-var", f"PATH={CT_PATH}", "--set-var", "HOME=/root",
             "--", "/bin/sh", "-c", script],
            text=True, timeout=timeout,
        )  # fmt: skip

    def ct_out(self, key: str, script: str) -> str:
        proc = self.ct_sh(key, script)
        assert proc.returncode == 0, f"{key}: {script!r}: {proc.stderr}"
        return proc.stdout

    def init_pid(self, key: str) -> int:
        out = subprocess.run(
            ["lxc-info", "-n", self.lxc_name(key), "-P", str(self.lab.lxcpath), "-p", "-H"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return int(out)

    def ct_root(self, key: str) -> Path:
        """The container's / as seen from this host (valid while it runs)."""
        return Path(f"/proc/{self.init_pid(key)}/root")

    def ct_processes(self, key: str, *needles: bytes) -> list[int]:
        """PIDs (host view) of the container's processes whose command line has every needle."""
        mine = os.stat(f"/proc/{self.init_pid(key)}/ns/pid").st_ino
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino != mine:
                    continue
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if all(n in cmdline for n in needles):
                found.append(int(entry))
        return found

    def kill_ct_processes(self, key: str, *needles: bytes) -> list[int]:
        """SIGKILL the container's processes started by our own run (matched by command line)."""
        pids = self.ct_processes(key, *needles)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return pids


def wait_for(check: Callable[[], object], timeout: float, what: str, step: float = 0.005):
    """Poll `check` until it returns something true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def journal_records(journal_dir: Path) -> list[dict]:
    """Every record of the newest journal in `journal_dir`."""
    newest = max(journal_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return read_journal(newest)


def statuses(document: dict) -> dict[str, str]:
    return {f"{c['node']}/{c['ctid']}": c["status"] for c in document["containers"]}
