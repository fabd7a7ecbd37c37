"""A failed task says why: rc, output tails and a known cause, on lab containers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

ONE = "node1/200"
# A python whose standard library lacks ensurepip, as on Debian without python3-venv:
# `python3 -m venv` then explains itself on stdout and exits 1.
BOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: make a venv
      shell: |
        set -e
        v=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        d=$(mktemp -d); mkdir -p "$d/bin" "$d/lib/python$v"
        cp "/usr/bin/python$v" "$d/bin/"
        for f in /usr/lib/python$v/*; do
          [ "${f##*/}" = ensurepip ] || ln -s "$f" "$d/lib/python$v/"
        done
        trap 'rm -rf "$d"' EXIT
        "$d/bin/python$v" -m venv "$d/venv"
"""


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def run(info, tmp_path: Path, *more: str) -> subprocess.CompletedProcess:
    book = tmp_path / "venv.yml"
    book.write_text(BOOK)
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "-i", str(info.inventory)]
    argv += ["--limit", ONE, "--journal-dir", str(tmp_path), *more]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def test_failed_venv_keeps_rc_and_output_in_json(info, tmp_path):
    proc = run(info, tmp_path, "--json")
    assert proc.returncode != 0
    task = json.loads(proc.stdout)["containers"][0]["tasks"][0]
    assert task["status"] == "failed"
    assert task["rc"] == 1
    assert "ensurepip is not" in task["stdout"]
    assert task["stderr"] == ""
    assert "python3-venv" in task["cause"]["fix"]


def test_failed_venv_text_shows_the_tail_and_the_fix(info, tmp_path):
    proc = run(info, tmp_path)
    assert proc.returncode != 0
    assert "ensurepip is not" in proc.stderr
    assert "apt-get install -y python3-venv" in proc.stderr


TINY = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: say hello
      command: echo hello
    - name: fail on one
      command: "false"
      when: inventory_hostname == "node2/200"
"""


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def test_runs_lists_and_shows_what_the_run_reported(info, tmp_path):
    book = tmp_path / "tiny.yml"
    book.write_text(TINY)
    where = ["-i", str(info.inventory), "--limit", "node1/200,node2/200"]
    ran = pctfleet("run", str(book), *where, "--journal-dir", str(tmp_path), "--json")
    assert ran.returncode == 2, ran.stderr
    own = json.loads(ran.stdout)
    listed = pctfleet("runs", "--json", "--journal-dir", str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    row = json.loads(listed.stdout)["runs"][0]
    assert row["id"] == own["run_id"] and row["summary"] == own["summary"]
    assert (row["exit_code"], row["command"], row["state"]) == (2, "run", "finished")
    shown = pctfleet("runs", "show", own["run_id"], "--json", "--journal-dir", str(tmp_path))
    detail = json.loads(shown.stdout)["containers"]
    for container in own["containers"]:
        key = f"{container['node']}/{container['ctid']}"
        assert detail[key]["status"] == container["status"]
        statuses = [t["status"] for t in detail[key]["tasks"]]
        assert statuses == [t["status"] for t in container["tasks"]]
    assert detail["node2/200"]["tasks"][-1]["rc"] == 1
