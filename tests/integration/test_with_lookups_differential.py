"""`with_<lookup>` loops and lookup() results, through ansible-playbook (`-c local`)
and pctfleet (`--local`): with_together, with_nested, with_subelements (the pair's
first no longer holds the list it was paired from; the playbook's variable keeps
it), with_indexed_items, with_file, with_lines, with_first_found (its folder follows
the module), with_template, with_env, with_vars, with_random_choice, and lookup()'s
joining and `errors=` (measured on ansible-core 2.19)."""

from __future__ import annotations

import json
from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    users:
      - name: alice
        groups: [wheel, docker]
        ssh: {keys: [k1, k2]}
      - name: bob
        groups: []
        ssh: {keys: [k3]}
      - name: carol
        ssh: {keys: []}
    a: [1, 2, 3]
    b: [x, y]
    nest: [[1, 2], 3]
  tasks:
    - name: together
      debug: {msg: "{{ item }}"}
      with_together: ["{{ a }}", "{{ b }}"]
    - name: nested, two lists
      debug: {msg: "{{ item.0 }}-{{ item.1 }}"}
      with_nested: ["{{ a }}", "{{ b }}"]
    - name: nested, three lists
      debug: {msg: "{{ item }}"}
      with_nested: [[1, 2], [a, b], [p]]
    - name: subelements, skip_missing
      debug: {msg: "{{ item.0.name }} {{ item.1 }} {{ item.0 }}"}
      with_subelements: ["{{ users }}", groups, {skip_missing: true}]
    - name: subelements, a dotted key
      debug: {msg: "{{ item.0.keys() | sort }} {{ item.0.ssh }} {{ item.1 }}"}
      with_subelements: ["{{ users }}", ssh.keys]
    - name: the variable keeps its lists
      debug: {msg: "{{ users[0].groups }} {{ users[0].ssh }}"}
    - name: indexed items
      debug: {msg: "{{ item }}"}
      with_indexed_items: "{{ nest }}"
    - name: files, read as data
      debug: {msg: "{{ item }}"}
      with_file: [a.txt, f1.txt]
    - name: a command's lines
      debug: {msg: "{{ item }}"}
      with_lines: "cat a.txt; pwd"
    - name: first found, in files/ for debug
      debug: {msg: "{{ item | relpath(playbook_dir) }}"}
      with_first_found: [nope.txt, f1.txt]
    - name: first found, not in templates/ for debug
      debug: {msg: "{{ item }}"}
      with_first_found: [t1.j2]
      ignore_errors: true
    - name: first found, in templates/ for template
      template: {src: "{{ item }}", dest: "{{ playbook_dir }}/out/t1.txt"}
      with_first_found: [nope.j2, t1.j2]
    - name: a template
      debug: {msg: "{{ item }}"}
      with_template: t1.j2
    - name: an unset environment variable
      debug: {msg: "[{{ item }}]"}
      with_env: [PCTFLEET_NOT_SET_ANYWHERE]
    - name: variables by name
      debug: {msg: "{{ item }}"}
      with_vars: [a, b]
    - name: a random choice of one
      debug: {msg: "{{ item }}"}
      with_random_choice: [only]
    - name: a random choice of three
      debug: {msg: "{{ item }}"}
      with_random_choice: [r1, r2, r3]
    - name: a file an earlier task writes
      copy: {dest: "{{ playbook_dir }}/out/made.txt", content: "made here\n"}
    - name: read by a loop when its task is reached
      debug: {msg: "{{ item }}"}
      with_file: ["{{ playbook_dir }}/out/made.txt"]
    - name: a loop's command runs once
      debug: {msg: "{{ item }}"}
      with_lines: "echo z >> out/lines.txt; wc -l < out/lines.txt"
    - name: lookup joins strings only
      debug:
        msg: "{{ lookup('items', [1, 2]) }} {{ lookup('items', ['a', 'b']) }}
          {{ lookup('items', [[1], 2]) }} [{{ lookup('file', 'nope', errors='ignore') }}]
          {{ query('file', 'nope', errors='ignore') }}"
    - name: a failure that errors=warn lets pass
      debug: {msg: "[{{ lookup('file', 'nope', errors='warn') }}]"}
"""


def _tree(folder: Path) -> None:
    for sub in ("out", "files", "templates"):
        (folder / sub).mkdir(parents=True)
    (folder / "a.txt").write_text("one\n{{ 2*2 }}\n")
    (folder / "files" / "f1.txt").write_text("fileA\n")
    (folder / "templates" / "t1.j2").write_text("t1 for {{ a | sum }}\n")
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / "out").iterdir())}


def _shown(result: dict) -> list:
    items = [str(item.get("msg", "")) for item in result.get("results", [])]
    return [differ.ansible_status(result), str(result.get("msg", "")), items]


def _ours(book: Path, tmp_path: Path) -> tuple[list, list]:
    tasks = differ.pctfleet_local(book, tmp_path / "runs")
    shown = [[t["status"], t["msg"], [i["msg"] for i in t.get("items") or []]] for t in tasks]
    return shown, [t.get("details", {}).get("warnings", []) for t in tasks]


def _relative(text: str, root: Path) -> str:
    return text.replace(str(root), "ROOT")


def test_with_lookup_loops_as_ansible_runs_them(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        _tree(folder)

    def ansible() -> dict:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
        shown = [_shown(t["hosts"]["localhost"]) for t in tasks]
        return {"tasks": json.loads(_relative(json.dumps(shown), theirs_dir)),
                "files": _files(theirs_dir)}  # fmt: skip

    theirs = differ.cached("with-lookups", [CALL, BOOK], ansible)
    ours, warnings = _ours(ours_dir / "book.yml", tmp_path)
    ours = json.loads(_relative(json.dumps(ours), ours_dir))
    expected = theirs["tasks"]
    # first_found finding nothing: both fail that task alone and go on; the words differ.
    (failed,) = [i for i, (status, _, _) in enumerate(expected) if status == "failed"]
    assert ours[failed][0] == "failed" and "No file was found" in ours[failed][1]
    ours[failed][1] = expected[failed][1] = ""
    # One of three, by chance on each side.
    (chance,) = [i for i, (_, _, items) in enumerate(expected) if items and items[0][:1] == "r"]
    assert len(ours[chance][2]) == len(expected[chance][2]) == 1
    assert ours[chance][2][0] in ("r1", "r2", "r3")
    ours[chance][2] = expected[chance][2] = []
    assert ours == expected
    assert _files(ours_dir) == theirs["files"]
    # errors='warn': the task is ok, and says what failed (ansible-core: a [WARNING]).
    assert warnings[-1] and "'file'" in warnings[-1][0] and not any(warnings[:-1])
