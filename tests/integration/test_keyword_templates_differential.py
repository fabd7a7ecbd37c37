"""Keywords written as templates, through ansible-playbook (`-c local`) and pctfleet
(`--local`): `environment: "{{ proxy_env }}"` on a play, block or task (layers merged,
the task's last), a variable that is `omit` left out of the environment, and
`ignore_errors`, `no_log` and `check_mode` given as `{{ }}` (measured on ansible-core
2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = """
- hosts: all
  gather_facts: false
  environment: "{{ play_env }}"
  vars:
    play_env: {PLAY: from-play, SHARED: play}
    proxy_env: {HTTPS_PROXY: "http://proxy.internal:3128", SHARED: proxy}
    tolerate: true
    quiet: true
    dry: "yes"
  tasks:
    - name: task env
      shell: echo "[$PLAY|$HTTPS_PROXY|$SHARED]"
      environment: "{{ proxy_env }}"
      register: o1
      changed_when: false
    - {name: shows task env, debug: {msg: "{{ o1.stdout }}"}}
    - name: omitted
      shell: echo "[${NO_SUCH-unset}|$SHARED]"
      environment: {NO_SUCH: "{{ no_such | default(omit) }}", SHARED: own}
      register: o2
      changed_when: false
    - {name: shows omitted, debug: {msg: "{{ o2.stdout }}"}}
    - environment: "{{ proxy_env }}"
      block:
        - name: block env
          shell: echo "[$HTTPS_PROXY|$SHARED|$OWN]"
          environment: {OWN: task}
          register: o3
          changed_when: false
    - {name: shows block env, debug: {msg: "{{ o3.stdout }}"}}
    - {name: tolerated, command: "false", ignore_errors: "{{ tolerate }}"}
    - {name: after tolerated, debug: {msg: went on}}
    - name: hidden
      debug: {msg: "a secret"}
      no_log: "{{ quiet }}"
    - name: dry write
      copy: {content: "new\\n", dest: "{{ playbook_dir }}/app.txt"}
      check_mode: "{{ dry }}"
"""


def _files(folder: Path) -> list:
    return sorted([p.name, p.read_text()] for p in folder.glob("*.txt"))


def test_keywords_written_as_templates_are_read_as_ansible_reads_them(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)
        (folder / "app.txt").write_text("old\n")
    ours, theirs = differ.local_side_by_side("keyword-templates", [CALL, BOOK], tmp_path, _files)
    shown = {row[0]: row[2] for row in ours["tasks"]}
    for row in (*ours["tasks"], *theirs["tasks"]):
        if not row[0].startswith(("shows", "after")):
            row[2] = ""  # only what the debug tasks say is compared
    assert ours == theirs
    assert shown["shows task env"] == "[from-play|http://proxy.internal:3128|proxy]"
    assert shown["shows omitted"] == "[unset|own]"
    assert shown["shows block env"] == "[http://proxy.internal:3128|proxy|task]"
    assert shown["hidden"] == "output hidden (no_log: true)"
    assert ours["files"] == [["app.txt", "old\n"]]
