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
