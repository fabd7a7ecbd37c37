"""Which keys a task registers, through ansible-playbook (`-c local`) and pctfleet
(`--local`): no command output (`rc`, `stdout`, `stderr`) and no `msg` where
ansible-core's module registers none (debug, set_fact, assert, stat, copy, template,
lineinfile, include_vars, slurp, find, file), on a first and a second run (measured on
ansible-core 2.19)."""

from __future__ import annotations

import differ

CALL = 1  # bump when how Ansible is called here changes
NAMES = " ".join(
    [
        "r_set r_assert r_debug r_dvar r_dlist r_stat",
        "r_copy r_copy2 r_line r_line2 r_tpl r_vars r_slurp r_find r_file",
    ]
)
BOOK = """
- hosts: all
  gather_facts: false
  vars: {ports: [1, 2]}
  tasks:
    - {set_fact: {a: 1}, register: r_set}
    - {assert: {that: [true]}, register: r_assert}
    - {debug: {msg: hi}, register: r_debug}
    - {debug: {var: ports}, register: r_dvar}
    - {debug: {msg: "{{ ports }}"}, register: r_dlist}
    - {name: types, debug: {msg: "{{ r_dlist.msg | type_debug }} {{ r_dvar.ports }}"}}
    - {stat: {path: /nonexistent}, register: r_stat}
    - {copy: {content: "x", dest: "{{ playbook_dir }}/c.txt"}, register: r_copy}
    - {copy: {content: "x", dest: "{{ playbook_dir }}/c.txt"}, register: r_copy2}
    - {lineinfile: {path: "{{ playbook_dir }}/c.txt", line: "y"}, register: r_line}
    - {lineinfile: {path: "{{ playbook_dir }}/c.txt", line: "y"}, register: r_line2}
    - {template: {src: v.yml, dest: "{{ playbook_dir }}/d.txt"}, register: r_tpl}
    - {include_vars: {file: v.yml}, register: r_vars}
    - {slurp: {src: "{{ playbook_dir }}/v.yml"}, register: r_slurp}
    - {find: {paths: "{{ playbook_dir }}", patterns: "*.yml"}, register: r_find}
    - {file: {path: "{{ playbook_dir }}/e.txt", state: touch}, register: r_file}
"""
for name in NAMES.split():
    BOOK += f"""    - name: keys {name}
      debug: {{msg: "{{{{ {name} | dict2items | map(attribute='key') | sort | join(' ') }}}}"}}
"""
# Keys ansible-core registers that pctfleet does not (yet): never the other way round.
NOT_YET = {"diff", "gid", "uid", "src", "group", "owner", "size"}


def test_a_task_registers_no_key_ansible_does_not(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)
        (folder / "v.yml").write_text("v: 1\n")
    ours, theirs = differ.local_side_by_side(
        "registered-keys", [CALL, BOOK], tmp_path, lambda _: []
    )
    keys = {
        name: (set(mine[2].split()), set(their[2].split()))
        for mine, their in zip(ours["tasks"], theirs["tasks"], strict=True)
        if (name := mine[0]).startswith("keys ")
    }
    assert len(keys) == len(NAMES.split())
    for name, (mine, their) in keys.items():
        assert mine <= their, f"{name}: pctfleet registers {sorted(mine - their)} too"
        assert their - mine <= NOT_YET, f"{name}: pctfleet lacks {sorted(their - mine)}"
    assert keys["keys r_debug"][0] == {"changed", "failed", "msg"}
    assert keys["keys r_dvar"][0] == {"changed", "failed", "ports"}
    pairs = zip(ours["tasks"], theirs["tasks"], strict=True)
    types = [(mine[2], their[2]) for mine, their in pairs if mine[0] == "types"]
    assert types == [("list [1, 2]", "list [1, 2]")]
    assert keys["keys r_stat"][0] == {"changed", "failed", "stat"}
