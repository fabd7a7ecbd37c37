"""Two runs at one container: the second waits for the lock inside the container."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.lab

KEY = "node2/200"
BOOK = """\
- hosts: all
  tasks:
    - name: slow change
      shell: "echo start $(date +%s.%N) >> /tmp/pctfleet-lock-log; sleep {sleep};
              echo end $(date +%s.%N) >> /tmp/pctfleet-lock-log"
"""


@pytest.fixture(scope="module")
def inventory(lab):
    return str(lab.up(nodes=2, containers=2).inventory)


def start(inventory: str, book, tmp_path, *more: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pctfleet",
            "run",
            str(book),
            "-i",
            inventory,
            "--limit",
            KEY,
            "--json",
            "--journal-dir",
            str(tmp_path),
            *more,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def in_ct(inventory: str, script: str) -> str:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pctfleet",
            "exec",
            "-i",
            inventory,
            "--limit",
            KEY,
            "--",
            "sh",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


def book(tmp_path, sleep: float):
    path = tmp_path / f"lock-{sleep}.yml"
    path.write_text(textwrap.dedent(BOOK.format(sleep=sleep)))
    return path


def test_second_run_waits_and_never_interleaves(inventory, tmp_path):
    in_ct(inventory, "rm -f /tmp/pctfleet-lock-log")
    first = start(inventory, book(tmp_path, 3), tmp_path)
    time.sleep(1.5)
    second = start(inventory, book(tmp_path, 0.1), tmp_path)
    _, waited = second.communicate(timeout=60)
    assert first.wait(60) == 0 and second.returncode == 0, waited
    # The operator is told what the second run waits for, not left with a silent terminal.
    told = [line for line in waited.splitlines() if "waiting for the lock of run" in line]
    assert len(told) == 1, waited
    assert told[0].startswith(f"{KEY}: ") and "held since" in told[0], told
    assert "lease until" in told[0] and "giving up in" in told[0], told
    lines = [line.split() for line in in_ct(inventory, "cat /tmp/pctfleet-lock-log").splitlines()]
    assert [kind for kind, _ in lines] == ["start", "end", "start", "end"]
    assert (
        in_ct(inventory, "ls /run/pctfleet/run.lock 2>&1 || echo released")
        .strip()
        .endswith("released")
    )


def test_waiting_gives_up_with_the_holder_named(inventory, tmp_path):
    first = start(inventory, book(tmp_path, 4), tmp_path)
    time.sleep(1.5)
    second = start(inventory, book(tmp_path, 0.2), tmp_path, "--lock-wait", "1")
    out, _ = second.communicate(timeout=60)
    first.wait(60)
    assert second.returncode == 2
    message = json.loads(out)["containers"][0]["message"]
    assert "locked by run" in message and "lease until" in message


def test_lock_of_a_killed_run_is_taken_over(inventory, tmp_path):
    in_ct(inventory, "rm -f /tmp/pctfleet-lock-log")
    # The task outlasts any delay of a loaded machine: the kill lands while it holds the lock.
    killed = start(inventory, book(tmp_path, 8), tmp_path, "--lock-lease", "1")
    deadline = time.monotonic() + 30
    while "start" not in in_ct(inventory, "cat /tmp/pctfleet-lock-log 2>/dev/null"):
        assert time.monotonic() < deadline
    killed.kill()  # SIGKILL: no release, the lock stays behind
    killed.wait()
    holder = in_ct(inventory, "cat /run/pctfleet/run.lock/holder")
    assert holder.split()[0]  # a run id is recorded
    started = time.monotonic()
    second = start(inventory, book(tmp_path, 0.1), tmp_path, "--lock-wait", "30")
    assert second.wait(60) == 0, second.stderr.read()
    assert time.monotonic() - started < 30
    assert (
        in_ct(inventory, "ls /run/pctfleet/run.lock 2>&1 || echo released")
        .strip()
        .endswith("released")
    )
