"""A loop and a block/rescue/always in a real container: changes once, then one call."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.lab

BOOK = """\
- hosts: all
  vars: {base: /opt/pctfleet-loops, names: [a, b, c]}
  tasks:
    - name: reset
      file: {path: "{{ base }}", state: absent}
      when: reset | default(false) | bool
    - name: folders
      file: {path: "{{ base }}/{{ item }}", state: directory}
      loop: "{{ names }}"
    - name: guarded
      block:
        - name: marker, then a failure on the first run only
          command: sh -c 'touch {{ base }}/done; exit 3' creates={{ base }}/done
      rescue:
        - name: note what failed
          copy: {dest: "{{ base }}/rescued", content: "{{ ansible_failed_task.name }}\\n"}
      always:
        - name: numbered files
          copy: {dest: "{{ base }}/{{ item }}/n", content: "{{ item }}\\n"}
          with_items: "{{ names }}"
"""


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(cmd, capture_output=True, timeout=600, text=True)


def test_a_looped_block_playbook_converges_to_one_call(lab, tmp_path):
    info = lab.up(nodes=2, containers=2)
    book = tmp_path / "loops.yml"
    book.write_text(textwrap.dedent(BOOK))

    def run(*more: str) -> dict:
        inventory = str(info.inventory)
        common = ("--limit", "node1/200", "--json", "--journal-dir", str(tmp_path))
        proc = pctfleet("run", str(book), "-i", inventory, *common, *more)
        assert proc.stdout, proc.stderr
        [container] = json.loads(proc.stdout)["containers"]
        return container

    first = run("-e", "reset=true")
    assert first["status"] == "changed", first
    assert first["stats"]["rescued"] == 1 and first["stats"]["failed"] == 0
    folders = next(t for t in first["tasks"] if t["name"] == "folders")
    assert [i["status"] for i in folders["items"]] == ["changed"] * 3
    second = run()
    assert second["status"] == "ok", second
    assert second["remote_calls"] == 1, second
    assert second["stats"]["rescued"] == 0 and second["stats"]["changed"] == 0
