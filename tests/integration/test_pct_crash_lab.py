"""A `pct exec` that dies before it enters the container, as lxc-attach does here.

LXC 5.0's lxc-attach first re-executes itself from a sealed memfd copy; on a
loaded host the sealing can fail, and it aborts (SIGABRT) before it attaches.
The lab's pct dies the same way when armed (`Lab.pct_crashes`). Nothing ran in
the container, so the call is sent once more; the command runs exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

KEY = "node1/200"
LOG = "/tmp/pctfleet-crash-test"


def pctfleet(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The CLI with /dev/null on stdin (as from cron), or `stdin` through a pipe."""
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    argv = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **feed)


@pytest.fixture
def info(lab):
    found = lab.up(nodes=2, containers=2)
    assert pctfleet("exec", "-i", str(found.inventory), "--limit", KEY, "--", "rm", "-f", LOG)
    yield found
    pctfleet("exec", "-i", str(found.inventory), "--limit", KEY, "--", "rm", "-f", LOG)


def appended(info) -> subprocess.CompletedProcess:
    script = f"echo once >> {LOG}; cat {LOG}"
    return pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "sh", "-c", script)


def test_a_crash_before_entering_runs_the_command_once(lab, info):
    with lab.pct_crashes("node1", 1):
        done = appended(info)
        assert lab.pct_crashes_left("node1") == 0  # pct did die once
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("once\n", "")


def test_a_crash_on_both_tries_fails_and_names_it(lab, info):
    with lab.pct_crashes("node1", 2):
        done = appended(info)
        assert lab.pct_crashes_left("node1") == 0
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pct failed (exit 134): killed by signal ABRT" in done.stderr
    left = pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "cat", LOG)
    assert left.returncode == 1 and "No such file" in left.stderr  # it never ran


def test_a_pipe_on_stdin_is_not_sent_again(lab, info):
    with lab.pct_crashes("node1", 1):
        argv = ["exec", "-i", str(info.inventory), "--limit", KEY, "--", "sh", "-c"]
        done = pctfleet(*argv, f"cat >> {LOG}", stdin="from a pipe\n")
        assert lab.pct_crashes_left("node1") == 0
    assert done.returncode == 2 and "pct failed (exit 134)" in done.stderr
    left = pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "cat", LOG)
    assert left.returncode == 1  # nothing ran: part of a pipe may be gone, so no rerun


def test_a_run_counts_the_call_it_sent_again(lab, info, tmp_path: Path):
    book = tmp_path / "append.yml"
    book.write_text(
        textwrap.dedent(f"""\
            - hosts: all
              tasks:
                - name: append a line
                  shell: echo once >> {LOG}
        """)
    )
    args = ["run", str(book), "-i", str(info.inventory), "--limit", KEY, "--json"]
    with lab.pct_crashes("node1", 1):
        done = pctfleet(*args, "--journal-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [run] = json.loads(done.stdout)["containers"]
    assert (run["status"], run["remote_reruns"]) == ("changed", 1), run
    [journal] = (tmp_path / "runs").glob("*.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    [container] = [r for r in records if r["kind"] == "container"]
    assert container["remote_reruns"] == 1
    said = pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "cat", LOG)
    assert said.stdout == "once\n"
    again = pctfleet(*args, "--journal-dir", str(tmp_path / "runs"))
    assert json.loads(again.stdout)["containers"][0]["remote_reruns"] == 0


def test_exec_json_counts_the_call_it_sent_again(lab, info):
    argv = ["exec", "-i", str(info.inventory), "--limit", KEY, "--json", "--", "true"]
    with lab.pct_crashes("node1", 1):
        done = pctfleet(*argv)
    assert done.returncode == 0, done.stderr
    [result] = json.loads(done.stdout)["results"]
    assert (result["status"], result["remote_reruns"]) == ("ok", 1)
    with lab.pct_crashes("node1", 2):
        failed = json.loads(pctfleet(*argv).stdout)["results"][0]
    assert (failed["status"], failed["remote_reruns"]) == ("failed", 1)
    assert json.loads(pctfleet(*argv).stdout)["results"][0]["remote_reruns"] == 0
