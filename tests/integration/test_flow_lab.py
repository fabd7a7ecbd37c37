"""run_once and serial/max_fail_percentage on the lab's base containers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pctfleet.inventory import load_inventory

pytestmark = pytest.mark.lab

BASE = "node1/200,node1/201,node2/200,node2/201"

RUN_ONCE = """\
- hosts: all
  tasks:
    - name: clear
      file: {path: /tmp/pctfleet-flow-once, state: absent}
    - name: once
      shell: cat /proc/sys/kernel/random/uuid | tee /tmp/pctfleet-flow-once
      register: token
      run_once: true
    - name: marker
      stat: {path: /tmp/pctfleet-flow-once}
      register: marker
    - name: show
      debug: {msg: "{{ token.stdout }} {{ marker.stat.exists }}"}
"""

# A container of the batch that has not started when another fails is stopped
# before its first task (engine.py): the failing one first waits, so its
# batch-mate has surely started its play.
SERIAL = """\
- hosts: all
  serial: 2
  max_fail_percentage: 0
  tasks:
    - name: slow in one container
      command: sleep 2
      when: server_port == {port}
    - name: breaks in one container
      fail: {msg: broken}
      when: server_port == {port}
    - name: done
      command: "true"
"""


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(cmd, capture_output=True, timeout=600, text=True)


def run_book(info, tmp_path, text: str) -> tuple[int, dict]:  # noqa: ANN001
    book = tmp_path / "flow.yml"
    book.write_text(textwrap.dedent(text))
    common = ("--limit", BASE, "--json", "--journal-dir", str(tmp_path))
    proc = pctfleet("run", str(book), "-i", str(info.inventory), *common)
    assert proc.stdout, proc.stderr
    doc = json.loads(proc.stdout)
    return proc.returncode, {f"{c['node']}/{c['ctid']}": c for c in doc["containers"]}


def test_run_once_runs_in_one_container_and_its_result_reaches_all(lab, tmp_path):
    info = lab.up(nodes=2, containers=2)
    code, runs = run_book(info, tmp_path, RUN_ONCE)
    assert code == 0, runs
    ran = [key for key, run in runs.items() if "once" in [t["name"] for t in run["tasks"]]]
    assert ran == ["node1/200"], ran
    shows = {key: run["tasks"][-1]["msg"] for key, run in runs.items()}
    token = shows["node1/200"].split()[0]
    assert len(token) == 36, shows  # a uuid
    # Every container registered the one token; only the runner has the file.
    assert shows == {key: f"{token} {key == 'node1/200'}" for key in BASE.split(",")}, shows


def test_serial_stops_after_a_batch_over_max_fail_percentage(lab, tmp_path):
    info = lab.up(nodes=2, containers=2)
    inv = load_inventory(info.inventory)
    [second] = [c for c in inv.select("node1/201")]
    port = inv.vars_for(second, {})["server_port"]
    code, runs = run_book(info, tmp_path, SERIAL.replace("{port}", str(port)))
    assert code != 0
    assert runs["node1/201"]["status"] == "failed"
    assert runs["node1/200"]["status"] in ("ok", "changed")  # batch 1 finished its play
    for key in ("node2/200", "node2/201"):
        assert runs[key]["status"] == "untouched", runs[key]
        assert runs[key]["tasks"] == [] and runs[key]["remote_calls"] == 0
        assert "batch 1: 1/2 failed, over max_fail_percentage 0" in runs[key]["message"]
