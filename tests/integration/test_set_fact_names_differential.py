"""`set_fact` names written as templates, through ansible-playbook (`-c local`) and
pctfleet (`--local`): rendered with the task's variables (`"port_{{ model }}"`) or a
registered result, and read by later tasks directly (measured on ansible-core 2.19)."""

from __future__ import annotations

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = """
- hosts: all
  gather_facts: false
  vars: {model: llama}
  tasks:
    - set_fact: {"port_{{ model }}": 30000, plain: 1}
    - {name: direct, debug: {msg: "{{ port_llama }} {{ plain }}"}}
    - {name: looked up, debug: {msg: "{{ lookup('vars', 'port_' ~ model) }}"}}
    - {command: echo qwen, register: other, changed_when: false}
    - set_fact: {"dyn_{{ other.stdout }}": "{{ other.stdout | upper }}"}
    - {name: from a result, debug: {msg: "{{ dyn_qwen }}"}}
"""


def test_set_fact_names_are_rendered_as_ansible_renders_them(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)
    ours, theirs = differ.local_side_by_side("set-fact-names", [CALL, BOOK], tmp_path, lambda _: [])
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert ours == theirs
    assert (shown["direct"], shown["looked up"], shown["from a result"]) == (
        "30000 1",
        "30000",
        "QWEN",
    )
