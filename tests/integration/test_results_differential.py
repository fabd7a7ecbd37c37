"""What a task leaves registered, and which handlers run when, through
ansible-playbook (`-c local`) and pctfleet (`--local`): a task (or loop item) its
`when` skipped (`skipped`, `false_condition`: the first that failed), `until` out of
attempts (`failed`, ansible-core's `attempts`), `retries` without `until` (again until
it does not fail), task names rendered as the task starts, what copy and file register
(`dest`/`path`, `state`, `checksum`, `size`, `mode`), and handlers that notify
handlers (one listed after runs in the same flush, one listed before at the next)
(measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {yes_: true, no_: false, out: "{{ playbook_dir }}/out"}
  tasks:
    - name: skipped by the second condition
      command: echo never
      when: [yes_, no_, "1 == 2"]
      register: skipped_one
    - name: what a skip registers
      debug:
        msg: "{{ skipped_one.skipped }} {{ skipped_one.false_condition }}
          {{ skipped_one.skip_reason }} {{ skipped_one.changed }} {{ skipped_one is skipped }}"
    - name: a registered name a skip overwrites
      set_fact: {kept: before}
    - name: skipped loop
      command: echo {{ item }}
      loop: [1, 2]
      when: item > 5
      register: kept
    - name: what a skipped loop registers
      debug:
        msg: "{{ kept.skipped }} {{ kept.msg }} {{ kept.results | map(attribute='false_condition')
          | list }} {{ kept.results | map(attribute='item') | list }}"
    - name: until out of attempts
      command: echo not yet
      register: waited
      until: waited.stdout == 'ready'
      retries: 2
      delay: 0
      ignore_errors: true
    - name: what it registers
      debug: {msg: "{{ waited.attempts }} {{ waited.failed }} {{ waited is failed }}"}
    - name: reached only when it failed
      debug: {msg: reached}
      when: waited is failed
    - name: retries without until, failing once
      shell: "test -e {{ out }}/flag || { touch {{ out }}/flag; exit 1; }"
      register: again
      retries: 3
      delay: 0
    - name: its attempts
      debug: {msg: "{{ again.attempts }} {{ again.failed }} {{ again.rc }}"}
    - name: "named from {{ out | basename }}"
      debug: {msg: named}
      register: named
    - name: "named before it registers: {{ named.msg }} {{ later.msg | default('none') }}"
      debug: {msg: again}
      register: later
    - name: a file written
      copy: {content: "abc\n", dest: "{{ out }}/written", mode: "0640"}
      register: written
    - name: written again
      copy: {content: "abc\n", dest: "{{ out }}/written", mode: "0640"}
      register: again
    - name: a folder
      file: {path: "{{ out }}/folder", state: directory}
      register: folder
    - name: what they register
      debug:
        msg: "{{ written.dest | basename }} {{ written.checksum }} {{ written.md5sum }}
          {{ written.size }} {{ written.state }} {{ written.mode }} | {{ again.path | basename }}
          {{ again.checksum }} {{ again.mode }} {{ again.changed }} | {{ folder.path | basename }}
          {{ folder.state }}"
    - name: notify a handler that notifies others
      command: "true"
      notify: restart unit
    - name: notify one more
      command: "true"
      notify: second
  handlers:
    - name: health check
      shell: "echo health >> {{ out }}/handlers"
    - name: restart unit
      shell: "echo restart >> {{ out }}/handlers"
      notify: [health check, after]
    - name: after
      shell: "echo after >> {{ out }}/handlers"
    - name: second
      shell: "echo second >> {{ out }}/handlers"
      notify: restart unit
"""


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / "out").iterdir()) if p.is_file()}


def test_registered_results_and_handler_chains_as_in_ansible(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)

    ours, theirs = differ.local_side_by_side("results", [CALL, BOOK], tmp_path, _files)
    expected = theirs["tasks"]
    # Skip and failure messages are worded differently; statuses and the rest agree.
    for row in (*ours["tasks"], *expected):
        if row[1] in ("skipped", "failed"):
            row[2] = ""
    assert ours == theirs
