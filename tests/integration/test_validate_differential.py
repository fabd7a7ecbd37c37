"""`validate` on copy, template, lineinfile, blockinfile and replace, through
ansible-playbook (`-c local`) and pctfleet (`--local`): the command checks the new file
(`%s`) before it replaces the old one; refused, the old file stays, no backup is made,
the task fails and registers ansible-core's words (`failed to validate`, `exit_status`,
the validator's stdout and stderr; the edit modules' `rc:N error:...`), a backup is
made all the same; an unchanged
file is not validated (measured on ansible-core 2.19)."""

from __future__ import annotations

import re
from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {out: "{{ playbook_dir }}/out"}
  tasks:
    - name: passes
      copy: {content: "good\n", dest: "{{ out }}/a.conf", validate: "grep -q good %s"}
    - name: refused, with output
      copy:
        content: "bad\n"
        dest: "{{ out }}/keep.conf"
        backup: true
        validate: "sh -c 'echo said; echo complained >&2; exit 2' %s"
      register: bad
      ignore_errors: true
    - name: what it registers
      debug:
        msg: "{{ bad.msg }} | {{ bad.exit_status }} | {{ bad.stdout }} | {{ bad.stderr }}
          | {{ bad.changed }}"
    - name: a template refused
      template: {src: t.j2, dest: "{{ out }}/t.conf", validate: "sh -c 'exit 3' %s"}
      register: refused_template
      ignore_errors: true
    - name: its status
      debug: {msg: "{{ refused_template.msg }} {{ refused_template.exit_status }}"}
    - name: a path inside a word
      template: {src: t.j2, dest: "{{ out }}/in word.conf", validate: "test -s --%s"}
      ignore_errors: true
    - name: lineinfile refused
      lineinfile: {path: "{{ out }}/keep.conf", line: added, validate: "grep -q nothere %s"}
      register: edit
      ignore_errors: true
    - name: its words
      debug: {msg: "{{ edit.msg }}"}
    - name: blockinfile passes
      blockinfile: {path: "{{ out }}/keep.conf", block: "in a block", validate: "grep -q block %s"}
    - name: replace refused
      replace: {path: "{{ out }}/keep.conf", regexp: old, replace: new, validate: "false %s"}
      ignore_errors: true
    - name: unchanged, not validated
      copy: {content: "good\n", dest: "{{ out }}/a.conf", validate: "false %s"}
"""


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    (folder / "out" / "keep.conf").write_text("old\n")
    (folder / "t.j2").write_text("t {{ 1 + 1 }}\n")
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> dict[str, str]:
    """The files left, a backup's pid and time taken out of its name."""
    found = sorted((root / "out").iterdir())
    return {re.sub(r"\.\d+\.[\d-]+@[\d:]+~$", ".BACKUP~", p.name): p.read_text() for p in found}


def test_validate_as_in_ansible(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)

    ours, theirs = differ.local_side_by_side("validate", [CALL, BOOK], tmp_path, _files)
    for row in (*ours["tasks"], *theirs["tasks"]):
        if row[1] != "ok" or not row[0].startswith(("what", "its")):
            row[2] = ""  # only the debug lines' text is compared
    assert ours == theirs
