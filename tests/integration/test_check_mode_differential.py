"""`--check` on command and shell, through ansible-playbook (`-c local --check`) and
pctfleet (`--local --check`): a command check mode does not run is skipped and
registers `skipped`, `rc` 0 and "Command would have run if not in check mode"; one
whose `creates`/`removes` say it would run is changed (measured on ansible-core 2.19)."""

from __future__ import annotations

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  tasks:
    - name: a plain command
      shell: echo hi
      register: plain
    - name: what it registers
      debug: {msg: "{{ plain is skipped }} {{ plain.rc }} {{ plain.msg }} {{ plain.changed }}"}
    - name: creates something missing
      command: "touch {{ playbook_dir }}/made"
      args: {creates: "{{ playbook_dir }}/made"}
      register: guarded
    - name: what that registers
      debug:
        msg: "{{ guarded is skipped }} {{ guarded.rc }} {{ guarded.msg }} {{ guarded.changed }}"
    - name: creates something there
      command: "touch {{ playbook_dir }}/other"
      args: {creates: "{{ playbook_dir }}/book.yml"}
      register: done
    - name: and that
      debug: {msg: "{{ done is skipped }} {{ done.rc }} {{ done.changed }}"}
"""


def test_check_mode_commands_as_in_ansible(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)

    def ansible() -> list:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir, "--check")
        hosts = [t["hosts"]["localhost"] for t in tasks]
        shown = [[differ.ansible_status(h), str(h.get("msg", ""))] for h in hosts]
        return [[status, msg.replace(str(theirs_dir), "ROOT")] for status, msg in shown]

    theirs = differ.cached("check-mode", [CALL, BOOK], ansible)
    tasks = differ.pctfleet_local(ours_dir / "book.yml", tmp_path / "runs", "--check")
    ours = [[t["status"], t["msg"].replace(str(ours_dir), "ROOT")] for t in tasks]
    assert ours == theirs
    assert sorted(p.name for p in ours_dir.iterdir()) == ["book.yml"]
