"""What a container's earlier plays leave for its later ones, through ansible-playbook
(`-c local`) and pctfleet (`--local`): registered results, set_fact values (over a
later play's own `vars`, under -e) and gathered facts, in arguments, `when` and
handlers (measured on ansible-core 2.19: a host keeps them for the whole run)."""

from __future__ import annotations

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- name: first
  hosts: all
  gather_facts: true
  vars: {g: first-play}
  tasks:
    - name: register
      command: echo hi
      register: said
    - name: set facts
      set_fact: {f: 1, g: from-set-fact, pinned: from-set-fact}
- name: second
  hosts: all
  gather_facts: false
  vars: {g: second-play, f: 2, own: second-play}
  tasks:
    - name: read them
      debug:
        msg: "{{ said.stdout }} {{ f }} {{ g }} {{ own }} {{ pinned }}
          {{ ansible_distribution is defined }} {{ ansible_facts.distribution is defined }}"
    - name: a condition on an earlier result
      debug: {msg: "when held"}
      when: said.rc == 0
    - name: notify a handler that reads one
      command: "true"
      notify: show
    - name: set again
      set_fact: {f: 3}
  handlers:
    - name: show
      debug: {msg: "handler {{ said.stdout }} {{ f }}"}
- name: third
  hosts: all
  gather_facts: false
  tasks:
    - name: the latest value
      debug: {msg: "{{ f }} {{ g }}"}
"""
EXTRA = ["-e", "pinned=from-extra"]


def _shown(tasks: list) -> list:
    return [[t["status"], str(t["msg"])] for t in tasks]


def test_what_earlier_plays_leave_for_later_ones(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)

    def ansible() -> list:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir, *EXTRA)
        hosts = [t["hosts"]["localhost"] for t in tasks if "localhost" in t["hosts"]]
        return [[differ.ansible_status(h), str(h.get("msg", ""))] for h in hosts]

    theirs = differ.cached("across-plays", [CALL, BOOK, EXTRA], ansible)
    ours = _shown(differ.pctfleet_local(ours_dir / "book.yml", tmp_path / "runs", *EXTRA))
    # ansible-core lists fact gathering as a task of its own.
    assert theirs[0] == ["ok", ""]
    assert ours == theirs[1:]


HOSTVARS_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {port: 8000}
  tasks:
    - {name: set, set_fact: {port: 9000}}
    - {name: register, command: echo hi, register: said}
    - name: its own hostvars
      debug:
        msg: "{{ hostvars[inventory_hostname].port }} {{ hostvars[me].said.stdout }}"
      vars: {me: "{{ inventory_hostname }}"}
- hosts: all
  gather_facts: false
  tasks:
    - name: in a later play
      debug: {msg: "{{ hostvars[inventory_hostname]['port'] }}"}
"""


def test_a_host_s_own_hostvars_hold_what_its_tasks_set(tmp_path):
    """hostvars[inventory_hostname] shows set_fact and register values (it was refused
    before the run, and held only inventory variables)."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(HOSTVARS_BOOK)
    ours, theirs = differ.local_side_by_side(
        "hostvars-own", [CALL, HOSTVARS_BOOK], tmp_path, lambda _: []
    )
    assert ours == theirs
    assert [row[2] for row in ours["tasks"]][-2:] == ["9000 hi", "9000"]
