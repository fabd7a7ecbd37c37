"""`include_vars: {dir: ...}` through ansible-playbook (`-c local`) and pctfleet
(`--local`): folders walked in path order and files in name order (later files win),
`depth`, `files_matching`, `ignore_files` (a list, or one string), `extensions` with
`ignore_unknown_extensions`, an empty file, `name`, a role's vars/ folder, and
`ansible_included_var_files` (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
SHOW = "{{ v | to_json(sort_keys=True) }} {{ v | dict2items | map(attribute='key') | list }}"
BOOK = rf"""
- hosts: all
  gather_facts: false
  tasks:
    - name: all of it
      include_vars: {{dir: conf}}
      register: read
    - name: top level
      debug: {{msg: "{{{{ [a, b, c, deep, j] }}}}"}}
    - name: the files read
      debug:
        msg: "{{{{ read.ansible_included_var_files | map('replace', playbook_dir, '') | list }}}}"
    - {{name: named, include_vars: {{dir: conf, name: v}}}}
    - {{name: shows named, debug: {{msg: "{SHOW}"}}}}
    - {{name: matching, include_vars: {{dir: conf, files_matching: '^a', name: v}}}}
    - {{name: shows matching, debug: {{msg: "{SHOW}"}}}}
    - {{name: ignored, include_vars: {{dir: conf, ignore_files: [b.yml, '.*\.json'], name: v}}}}
    - {{name: shows ignored, debug: {{msg: "{SHOW}"}}}}
    - {{name: ignored as words, include_vars: {{dir: conf, ignore_files: "a.yml z.yml", name: v}}}}
    - {{name: shows ignored as words, debug: {{msg: "{SHOW}"}}}}
    - name: json only
      include_vars: {{dir: conf, extensions: [json], ignore_unknown_extensions: true, name: v}}
    - {{name: shows json only, debug: {{msg: "{SHOW}"}}}}
    - {{name: one level, include_vars: {{dir: conf, depth: 1, name: v}}}}
    - {{name: shows one level, debug: {{msg: "{SHOW}"}}}}
    - {{name: a role's, include_role: {{name: r}}}}
"""
FILES = {
    "conf/a.yml": "a: 1\nc: from-a\n",
    "conf/b.yml": "b: 2\nc: from-b\n",
    "conf/c.json": '{"j": 3, "c": "from-json"}\n',
    "conf/empty.yml": "",
    "conf/sub/z.yml": "deep: 1\nc: from-sub\n",
    "conf/subx/y.yml": "deep: 2\n",
    "roles/r/vars/main.yml": "main_var: m\n",
    "roles/r/vars/extra/x.yml": "role_x: from-role\n",
    "roles/r/tasks/main.yml": (
        "- {name: role dir, include_vars: {dir: extra, name: v}}\n"
        f'- {{name: shows role dir, debug: {{msg: "{SHOW}"}}}}\n'
    ),
}


def _tree(folder: Path) -> None:
    for name, text in {"book.yml": BOOK, **FILES}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def test_a_vars_folder_is_read_as_ansible_reads_it(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)
    inputs = [CALL, BOOK, FILES]
    ours, theirs = differ.local_side_by_side("include-vars-dir", inputs, tmp_path, lambda _: [])
    for row in (*ours["tasks"], *theirs["tasks"]):
        if not row[0].startswith(("shows", "top level", "the files")):
            row[2] = ""  # only what the debug lines show is compared
    assert ours == theirs
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert shown["top level"] == "[1, 2, 'from-sub', 2, 3]"


PRECEDENCE_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {port: 8000, name: play}
  tasks:
    - {name: set, set_fact: {port: 9000}}
    - {name: read, include_vars: {file: more.yml}}
    - {name: after the file, debug: {msg: "{{ port }} {{ name }} {{ only_file }}"}}
    - {name: registered, command: "echo hi", register: name}
    - {name: read again, include_vars: {file: more.yml}}
    - {name: after the register, debug: {msg: "{{ name.stdout }} {{ port }}"}}
    - {name: set again, set_fact: {only_file: from-fact}}
    - {name: last, debug: {msg: "{{ only_file }}"}}
- hosts: all
  gather_facts: false
  tasks:
    - {name: a later play reads it again, include_vars: {file: more.yml}}
    - {name: in the later play, debug: {msg: "{{ port }} {{ only_file }}"}}
"""
MORE = "port: 1234\nname: from-file\nonly_file: from-file\n"


def test_include_vars_does_not_override_set_fact_or_register(tmp_path):
    """ansible-core's precedence: include_vars (18) under set_fact and register (19),
    over play vars (12), and so across plays too."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(PRECEDENCE_BOOK)
        (folder / "more.yml").write_text(MORE)
    inputs = [CALL, PRECEDENCE_BOOK, MORE]
    ours, theirs = differ.local_side_by_side(
        "include-vars-precedence", inputs, tmp_path, lambda _: []
    )
    for row in (*ours["tasks"], *theirs["tasks"]):
        if not row[0].startswith(("after", "last", "in the")):
            row[2] = ""  # what the debug lines show is compared
    assert ours == theirs
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert shown["after the file"] == "9000 from-file from-file"
    assert shown["after the register"] == "hi 9000" and shown["last"] == "from-fact"
