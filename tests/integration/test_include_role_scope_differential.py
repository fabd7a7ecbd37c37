"""Where a role's defaults and vars/ reach, through ansible-playbook (`-c local`) and
pctfleet (`--local`): an include_role is private (its defaults and vars/ stay with its
tasks and handlers), `public: true` gives them to the rest of the play, and a role's
tasks see their own role's defaults over another role's (an import_role's, or a
default nothing overrode) while play vars still win (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {out: "{{ playbook_dir }}/out", from_play: play}
  tasks:
    - name: imported
      import_role: {name: venv}
    - name: seen after the import
      debug: {msg: "{{ venv_name }}"}
    - name: included, private
      include_role: {name: private}
    - name: private stays private
      debug:
        msg: "{{ private_default | default('not seen') }} {{ private_var | default('not seen') }}"
    - name: included with other defaults
      include_role: {name: venv, tasks_from: show, defaults_from: other}
    - name: included public
      include_role: {name: pub, public: true}
    - name: public reaches the play
      debug: {msg: "{{ pub_default }} {{ pub_var }} {{ from_play }}"}
    - name: a change for the private role's handler
      command: "true"
      notify: private handler
"""
FILES = {
    "roles/venv/defaults/main.yml": "venv_name: default\n",
    "roles/venv/defaults/other.yml": "venv_name: other\n",
    "roles/venv/tasks/main.yml": '- {name: venv main, debug: {msg: "{{ venv_name }}"}}\n',
    "roles/venv/tasks/show.yml": '- {name: venv show, debug: {msg: "{{ venv_name }}"}}\n',
    "roles/private/defaults/main.yml": "private_default: pd\nfrom_play: role default\n",
    "roles/private/vars/main.yml": "private_var: pv\n",
    "roles/private/tasks/main.yml": (
        "- {name: private sees, debug:"
        ' {msg: "{{ private_default }} {{ private_var }} {{ from_play }}"}}\n'
    ),
    "roles/private/handlers/main.yml": (
        '- {name: private handler, copy: {dest: "{{ out }}/handler",'
        ' content: "{{ private_default }}\\n"}}\n'
    ),
    "roles/pub/defaults/main.yml": "pub_default: d\nfrom_play: role default\n",
    "roles/pub/vars/main.yml": "pub_var: v\n",
    "roles/pub/tasks/main.yml": (
        '- {name: pub sees, debug: {msg: "{{ pub_default }} {{ pub_var }}"}}\n'
    ),
}


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    for name, text in {"book.yml": BOOK, **FILES}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / "out").iterdir())}


def test_role_defaults_and_vars_reach_where_ansible_lets_them(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)
    inputs = [CALL, BOOK, FILES]
    ours, theirs = differ.local_side_by_side("include-role-scope", inputs, tmp_path, _files)
    for rows in (ours["tasks"], theirs["tasks"]):
        for row in rows:
            row[0] = row[0].split(" : ", 1)[
                -1
            ]  # Ansible names an include_role's row after the role
            if row[0] == "included, private" or row[0].startswith("included"):
                row[2] = ""
    assert ours == theirs
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert shown["private stays private"] == "not seen not seen"
    assert shown["venv show"] == "other" and ours["files"] == {"handler": "pd\n"}


DUPLICATES_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {out: "{{ playbook_dir }}/out"}
  roles:
    - cuda
  tasks:
    - include_role: {name: cuda}
    - include_role: {name: cuda, allow_duplicates: false}
    - include_role: {name: other}
    - include_role: {name: other}
    - include_role: {name: other, allow_duplicates: false}
    - include_role: {name: never_ran, allow_duplicates: false}
    - include_role: {name: other, allow_duplicates: false}
      vars: {flavour: new}
    - include_role: {name: other, allow_duplicates: false}
      vars: {flavour: new}
"""
DUPLICATES_FILES = {
    f"roles/{role}/tasks/main.yml": (
        f'- {{name: "{role} ran", shell: "echo {role} >> {{{{ out }}}}/order"}}\n'
    )
    for role in ("cuda", "other", "never_ran")
}


def test_allow_duplicates_false_passes_a_role_that_ran_by(tmp_path):
    """As ansible-core: an include_role with `allow_duplicates: false` does not run a
    role that already ran for the host (from `roles:` or an include) with the same
    `vars:`; unnamed, an
    include_role is called "include_role : ROLE"."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        (folder / "out").mkdir(parents=True)
        for name, text in {"book.yml": DUPLICATES_BOOK, **DUPLICATES_FILES}.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    inputs = [CALL, DUPLICATES_BOOK, DUPLICATES_FILES]
    ours, theirs = differ.local_side_by_side("include-role-dups", inputs, tmp_path, _files)
    for row in (*ours["tasks"], *theirs["tasks"]):
        row[2] = ""
    assert ours == theirs
    assert ours["files"]["order"] == "cuda\ncuda\nother\nother\nnever_ran\nother\n"
