"""A templated `notify`, through ansible-playbook (`-c local`) and pctfleet
(`--local`): rendered with the task's variables when the task is reached (each loop
item's; a loop that changed notifies every item's names), a string that renders to a
list naming each handler, a `listen` topic, a handler's own templated notify; an
undefined name fails the task before it runs; a task that did not change notifies
nothing (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    several: [restart web, restart 0]
    out: "{{ playbook_dir }}/out"
  tasks:
    - name: each item names its own
      command: "true"
      notify: "restart {{ item }}"
      changed_when: item != 'db'
      loop: [web, db]
    - name: a list of names
      command: "true"
      notify: "{{ several }}"
    - name: a topic
      command: "true"
      notify: ["{{ 'cache' }} topic", plain]
    - name: undefined in notify
      command: "touch {{ out }}/ran-undefined"
      notify: "restart {{ nosuch }}"
      ignore_errors: true
      register: undefined
    - name: what it registered
      debug: {msg: "{{ undefined.failed }} {{ undefined.changed }}"}
    - name: not changed notifies nothing
      command: "true"
      changed_when: false
      notify: "restart {{ 'never' }}"
  handlers:
    - name: restart web
      command: "touch {{ out }}/web"
      notify: "{{ 'chained' }}"
    - name: restart db
      command: "touch {{ out }}/db"
    - name: restart 0
      command: "touch {{ out }}/0"
    - name: restart never
      command: "touch {{ out }}/never"
    - name: chained
      command: "touch {{ out }}/chained"
    - name: plain
      command: "touch {{ out }}/plain"
    - name: cache listener
      command: "touch {{ out }}/cache"
      listen: cache topic
"""


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "out").iterdir())


def test_a_templated_notify_calls_the_handlers_ansible_calls(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        (folder / "out").mkdir(parents=True)
        (folder / "book.yml").write_text(BOOK)
    ours, theirs = differ.local_side_by_side("notify", [CALL, BOOK], tmp_path, _files)
    for row in (*ours["tasks"], *theirs["tasks"]):
        if row[0] != "what it registered":
            row[2] = ""  # the undefined name's message is each tool's own
    assert ours == theirs
    assert ours["files"] == ["0", "cache", "chained", "db", "plain", "web"]
