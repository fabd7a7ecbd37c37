"""A variable built from an undefined one is undefined itself, through ansible-playbook
(`-c local`) and pctfleet (`--local`): `| default(...)` gives the default, `is defined`
is false and guards a `when`, at any depth (measured on ansible-core 2.19)."""

from __future__ import annotations

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = """
- hosts: all
  gather_facts: false
  vars: {api_url: "http://{{ api_host }}:8000", deep: "{{ api_url }}/v1", fine: "{{ 1 + 1 }}"}
  tasks:
    - {name: defaulted, debug: {msg: "{{ api_url | default('none') }}"}}
    - {name: defined, debug: {msg: "{{ api_url is defined }} {{ fine is defined }}"}}
    - {name: deeper, debug: {msg: "{{ deep | default('none2') }}"}}
    - {name: guarded, debug: {msg: "{{ api_url }}"}, when: api_url is defined}
"""


def test_a_variable_built_from_an_undefined_one_is_undefined(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)
    ours, theirs = differ.local_side_by_side("lazy-undefined", [CALL, BOOK], tmp_path, lambda _: [])
    for row in (*ours["tasks"], *theirs["tasks"]):
        if row[1] == "skipped":
            row[2] = ""  # pctfleet says why, ansible-core nothing
    assert ours == theirs
    assert [row[2] for row in ours["tasks"]] == ["none", "False True", "none2", ""]
