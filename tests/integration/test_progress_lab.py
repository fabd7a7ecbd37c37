"""`pctfleet run -v` on lab containers: each container's command output, as it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

TWO = "node1/200,node2/200"
BOOK = """\
- hosts: all
  tasks:
    - name: a long download
      shell: >-
        for p in 10 50 100; do printf "fetch %s%%\\r" $p; sleep 0.2; done;
        echo; echo "saved on {{ inventory_hostname }}" >&2
"""


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def run(info, tmp_path: Path, *more: str) -> subprocess.CompletedProcess:
    book = tmp_path / "download.yml"
    book.write_text(BOOK)
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "-i", str(info.inventory)]
    argv += ["--limit", TWO, "--journal-dir", str(tmp_path), *more]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def test_v_streams_each_containers_output_tail_to_stderr(info, tmp_path):
    proc = run(info, tmp_path, "-v", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["changed"] == 2
    for key in TWO.split(","):
        for text in ("fetch 10%", "fetch 50%", "fetch 100%", f"saved on {key}"):
            assert f"  {key} | {text}\n" in proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr


def test_without_v_no_output_is_streamed(info, tmp_path):
    proc = run(info, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert " | fetch" not in proc.stderr


# -- verify and rollout on a terminal --------------------------------------------------------

SLOW = """\
- hosts: all
  tasks:
    - name: a slow step
      shell: sleep 1.5
"""


def on_terminal(argv: list[str], timeout: float = 300) -> tuple[int, str]:
    """Run `argv` with stdout and stderr on a pseudo-terminal: what a person would see."""
    import os
    import pty
    import select
    import time

    main, side = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "160"}
    env.pop("CI", None)
    proc = subprocess.Popen(argv, stdin=side, stdout=side, stderr=side, env=env)
    os.close(side)
    seen, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([main], [], [], 0.5)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(main)
    proc.kill()
    return proc.wait(), seen.decode(errors="replace")


def pctfleet_argv(command: str, info, *more: str) -> list[str]:
    return [sys.executable, "-m", "pctfleet", command, "-i", str(info.inventory), *more]


def test_verify_shows_live_progress_on_a_terminal_and_one_document_with_json(info):
    argv = pctfleet_argv("verify", info, "--limit", TWO, "-k", "links")
    _, seen = on_terminal(argv)
    assert "containers: 0/2 done" in seen, seen[-3000:]
    assert "containers: 2/2 done, 0 in flight, 0 waiting" in seen, seen[-3000:]
    assert "\x1b[" in seen  # drawn in place
    proc = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    document = json.loads(proc.stdout)  # the whole of stdout, nothing else
    assert {row["container"] for row in document["containers"]} == set(TWO.split(","))
    assert "\x1b" not in proc.stdout + proc.stderr


def test_rollout_shows_the_batch_and_the_fleet_on_a_terminal(info, tmp_path):
    book = tmp_path / "slow.yml"
    book.write_text(SLOW)
    argv = pctfleet_argv("rollout", info, str(book), "--limit", TWO, "--serial", "1")
    argv += ["--no-gate", "--journal-dir", str(tmp_path)]
    code, seen = on_terminal(argv)
    assert code == 0, seen[-3000:]
    assert "batch 2/2, 1 container(s)" in seen, seen[-3000:]  # the panel's title
    # the whole rollout is counted from the start: batch 2's container waits during batch 1
    assert "containers: 0/2 done, 1 in flight, 1 waiting" in seen, seen[-3000:]
    assert "containers: 1/2 done, 1 in flight, 0 waiting" in seen, seen[-3000:]
    proc = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(text) for text in proc.stdout.splitlines()]  # JSON lines, nothing else
    assert events[-1]["kind"] == "summary" and len(events[-1]["done"]) == 2
    assert "\x1b" not in proc.stdout + proc.stderr
