"""delegate_to / local_action and per-task check_mode against real containers.

A delegated template and command must leave their files on this machine, not
in the container; a converged second run must cost one container call each;
`check_mode: true` must leave a real run's container untouched and
`check_mode: false` must change it under --check.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from suites import ct_exec

pytestmark = pytest.mark.lab

KEYS = ["node1/200", "node2/201"]
BOOK = """\
- hosts: all
  vars: {here: localhost, ct_dir: /opt/pctfleet-delegate}
  tasks:
    - name: reset (container)
      file: {path: "{{ ct_dir }}", state: absent}
      when: reset | default(false) | bool
    - name: a folder in the container
      file: {path: "{{ ct_dir }}", state: directory}
    - name: rendered on the controller
      template: {src: note.j2, dest: "{{ out }}/{{ ctid }}-{{ node_name }}.txt"}
      delegate_to: "{{ here }}"
    - name: run on the controller
      local_action: command touch {{ mark }} creates={{ mark }}
      vars: {mark: "{{ out }}/touched-{{ ctid }}-{{ node_name }}"}
    - name: a file in the container
      copy: {content: "x\\n", dest: "{{ ct_dir }}/real"}
    - name: only reported, even in a real run
      copy: {content: "x\\n", dest: "{{ ct_dir }}/pretend"}
      check_mode: true
    - name: really written, even under --check
      copy: {content: "x\\n", dest: "{{ ct_dir }}/forced"}
      check_mode: false
"""


def run(book: Path, inventory: Path, out: Path, *more: str) -> dict[str, dict]:
    args = ["run", str(book), "-i", str(inventory), "--limit", ",".join(KEYS), "--json"]
    args += ["--journal-dir", str(out / "journal"), "-e", f"out={out}", *more]
    proc = subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )
    assert proc.stdout, proc.stderr[-2000:]
    return {f"{c['node']}/{c['ctid']}": c for c in json.loads(proc.stdout)["containers"]}


def exists(inventory: Path, key: str, path: str) -> bool:
    return ct_exec(str(inventory), key, "sh", "-c", f"test -e {path} && echo y || echo n") == "y\n"


def test_delegated_tasks_run_here_and_check_mode_holds_per_task(lab, tmp_path):
    info = lab.up(nodes=2, containers=2)
    (tmp_path / "note.j2").write_text("{{ inventory_hostname }} via {{ here }}\n")
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(BOOK))
    out = tmp_path / "out"
    out.mkdir()

    first = run(book, info.inventory, out, "-e", "reset=true")
    for key in KEYS:
        assert first[key]["status"] == "changed", first[key]
        node, ctid = key.split("/")
        rendered = out / f"{ctid}-{node}.txt"
        assert rendered.read_text() == f"{key} via localhost\n"
        assert (out / f"touched-{ctid}-{node}").exists()
        assert not exists(info.inventory, key, str(rendered))
        assert not exists(info.inventory, key, str(out / f"touched-{ctid}-{node}"))
        assert exists(info.inventory, key, "/opt/pctfleet-delegate/real")
        assert not exists(info.inventory, key, "/opt/pctfleet-delegate/pretend")
        statuses = {t["name"]: t["status"] for t in first[key]["tasks"]}
        assert statuses["only reported, even in a real run"] == "changed"

    second = run(book, info.inventory, out)
    for key in KEYS:
        changed = [t["name"] for t in second[key]["tasks"] if t["status"] == "changed"]
        assert changed == ["only reported, even in a real run"], second[key]
        assert second[key]["remote_calls"] == 1, second[key]
        assert second[key]["local_calls"] == 2, second[key]  # the template's and guard's reads

    ct_exec(str(info.inventory), KEYS[0], "rm", "-f", "/opt/pctfleet-delegate/forced")
    checked = run(book, info.inventory, out, "--check")
    statuses = {t["name"]: t["status"] for t in checked[KEYS[0]]["tasks"]}
    assert statuses["really written, even under --check"] == "changed", checked[KEYS[0]]
    assert exists(info.inventory, KEYS[0], "/opt/pctfleet-delegate/forced")
