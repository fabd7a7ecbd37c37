"""`apply` on include_tasks and include_role, through ansible-playbook (`-c local`)
and pctfleet (`--local`): its keywords (`vars`, `ignore_errors`, `when`, `tags`) go to
each task the include brings in, not to the include; with `--tags` the include runs
by its own tags and its tasks by the applied ones (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {out: "{{ playbook_dir }}/out"}
  tasks:
    - name: include with apply
      include_tasks:
        file: inc.yml
        apply:
          vars: {greeting: applied}
          ignore_errors: true
          tags: [deploy]
      tags: [always]
    - name: include whose apply has a condition
      include_tasks:
        file: cond.yml
        apply:
          when: item != 'skip-me'
      loop: [keep, skip-me]
      tags: [always]
    - name: include without tags
      include_tasks: {file: plain.yml, apply: {tags: [deploy]}}
    - name: a role with apply
      include_role:
        name: r
        apply: {vars: {from_apply: yes-applied}, tags: [deploy]}
      tags: [always]
    - name: after
      copy: {dest: "{{ out }}/after", content: "after\n"}
"""
FILES = {
    "inc.yml": (
        '- {name: greets, copy: {dest: "{{ out }}/greeting", content: "{{ greeting }}\\n"}}\n'
        '- {name: fails, command: "false"}\n'
        '- {name: still here, copy: {dest: "{{ out }}/still", content: "x\\n"}}\n'
        '- {name: tagged extra, copy: {dest: "{{ out }}/extra", content: "x\\n"}, tags: [extra]}\n'
    ),
    "cond.yml": (
        '- {name: "cond {{ item }}", copy: {dest: "{{ out }}/{{ item }}", content: "x\\n"}}\n'
    ),
    "plain.yml": '- {name: plain, copy: {dest: "{{ out }}/plain", content: "x\\n"}}\n',
    "roles/r/tasks/main.yml": (
        '- {name: role task, copy: {dest: "{{ out }}/role", content: "{{ from_apply }}\\n"}}\n'
    ),
}


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    for name, text in {"book.yml": BOOK, **FILES}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / "out").iterdir())}


def _side_by_side(tmp_path: Path, kind: str, *more: str) -> tuple[dict, dict]:
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)
    ours, theirs = differ.local_side_by_side(kind, [CALL, BOOK, FILES], tmp_path, _files, *more)
    for row in (*ours["tasks"], *theirs["tasks"]):
        row[2] = ""  # statuses and files are compared; messages are each tool's own
    return ours, theirs


def test_apply_gives_its_keywords_to_the_included_tasks(tmp_path):
    ours, theirs = _side_by_side(tmp_path, "include-apply")
    assert ours == theirs
    assert ours["files"]["greeting"] == "applied\n" and "skip-me" not in ours["files"]


def test_with_tags_the_include_runs_by_its_own_tags_and_its_tasks_by_apply(tmp_path):
    ours, theirs = _side_by_side(tmp_path, "include-apply-tags", "--tags", "deploy")
    assert ours == theirs
    assert "greeting" in ours["files"] and "plain" not in ours["files"]


SET_IN_INCLUDE_BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    models: [{name: small, shards: 1}, {name: big, shards: 3}]
  tasks:
    - name: per model
      include_tasks: model.yml
      loop: "{{ models }}"
      loop_control: {loop_var: model}
    - name: what the included file set and registered
      debug: {msg: "total {{ shard_total }} last {{ counted.stdout }}"}
    - name: a role's fact
      include_role: {name: facts}
    - name: what the role set
      debug: {msg: "{{ from_role }}"}
"""
SET_IN_INCLUDE_FILES = {
    "model.yml": (
        "- set_fact: {shard_total: '{{ (shard_total | default(0)) + model.shards }}'}\n"
        "- {command: 'echo {{ model.name }}', register: counted}\n"
    ),
    "roles/facts/tasks/main.yml": "- set_fact: {from_role: set in a role}\n",
}


def test_names_set_in_included_files_are_known_before_the_run(tmp_path):
    """A set_fact or register inside a file an include brings in is a name later tasks
    may read: preflight knows it (it was refused as undefined)."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        for name, text in {"book.yml": SET_IN_INCLUDE_BOOK, **SET_IN_INCLUDE_FILES}.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    inputs = [CALL, SET_IN_INCLUDE_BOOK, SET_IN_INCLUDE_FILES]
    ours, theirs = differ.local_side_by_side("include-sets", inputs, tmp_path, lambda _: [])
    for row in (*ours["tasks"], *theirs["tasks"]):
        if not row[0].startswith("what"):
            row[2] = ""
    assert ours == theirs
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert shown["what the included file set and registered"] == "total 4 last big"
