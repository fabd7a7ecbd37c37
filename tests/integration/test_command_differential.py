"""command and shell as ansible-core runs them, through ansible-playbook (`-c local`)
and pctfleet (`--local`): `creates`/`removes` as glob patterns, `stdin` with its added
line break (`stdin_add_newline`), `strip_empty_ends`, and the command module's
expansion of `$NAME`, `${NAME}` and `~` in its words (`expand_argument_vars`; a name
not set stays as written; shell words are the shell's) (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {out: "{{ playbook_dir }}/out"}
  environment: {PF_SET: "set value", PF_EMPTY: "", PF_TRICKY: "a'b\"c $x"}
  tasks:
    - name: a marker
      copy: {content: "", dest: "{{ out }}/pip-24.0.dist-info"}
    - name: creates, a glob that matches
      command: "touch {{ out }}/ran-creates"
      args: {creates: "{{ out }}/pip-*.dist-info"}
      register: created
    - name: removes, a glob that matches nothing
      command: "touch {{ out }}/ran-removes"
      args: {removes: "{{ out }}/nothing-*.txt"}
      register: removed
    - name: what they register
      debug:
        msg: "{{ [created.msg, created.stdout, created.rc, removed.msg] | join(' | ')
          | replace(playbook_dir, 'ROOT') }}"
    - name: creates, a glob with a space
      command: "touch {{ out }}/ran-space"
      args: {creates: "{{ out }}/with space*"}
    - name: stdin gets a line break
      command: {cmd: wc -c, stdin: abc}
      register: counted
    - name: unless told not to
      command: {cmd: wc -c, stdin: abc, stdin_add_newline: false}
      register: counted_raw
    - name: output ends kept
      shell: printf 'x\n\n'
      register: kept
      args: {strip_empty_ends: false}
    - name: the counts
      debug: {msg: "{{ counted.stdout }} {{ counted_raw.stdout }} {{ kept.stdout | length }}"}
    - name: words expanded
      command: >-
        printf '[%s]' $PF_SET ${PF_SET}x $PF_EMPTY $PF_NOT_SET ${PF_NOT_SET} $1 x$PF_TRICKY
        "${not a name}" ~ ~/sub ~nobody ${IFS}x $PS1
      register: expanded
    - name: not expanded when told
      command:
        argv: [printf, "[%s]", "$PF_SET", "~"]
        expand_argument_vars: false
      register: verbatim
    - name: a shell's words are its own
      shell: printf '[%s]' '$PF_SET' "$PF_SET"
      register: shelled
    - name: the words
      debug:
        msg: "{{ expanded.stdout | replace(ansible_env_home, 'HOME') }}
          {{ verbatim.stdout }} {{ shelled.stdout }}"
      vars: {ansible_env_home: "{{ lookup('env', 'HOME') }}"}
"""


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    (folder / "out" / "with space here").write_text("")
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "out").iterdir())


def test_command_words_guards_and_stdin_as_in_ansible(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)

    ours, theirs = differ.local_side_by_side("command", [CALL, BOOK], tmp_path, _files)
    for row in (*ours["tasks"], *theirs["tasks"]):
        if row[0] != "what they register" and not row[0].startswith("the "):
            row[2] = ""  # only the debug lines' text is compared
    assert ours == theirs


RESULTS_CALL = 1  # bump when how Ansible is called here changes
# Each registered result: its keys (less Ansible's `invocation` and `exception`, which
# pctfleet does not register), its values but the times, and the times' forms.
SHOWN = (
    "{{ r | dict2items | rejectattr('key', 'in', hidden) | items2dict | to_json(sort_keys=True) }}"
    "{% for k in forms %} {{ k }}={{ 'absent' if k not in r"
    " else (r[k] is string and r[k] is match(forms[k])) if r[k] else r[k] }}{% endfor %}"
)
RESULTS_BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    hidden: [invocation, exception, start, end, delta]
    forms:
      start: '\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$'
      end: '\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$'
      delta: '0:00:\d\d\.\d{6}$'
  tasks:
    - name: ran
      command: printf '%s' $PF_SET
      environment: {PF_SET: a value}
      register: ran
    - name: ran from argv
      command: {argv: [printf, "%s-", "a b", "$PF_NOT_SET"]}
      register: argv
    - name: ran a shell line
      shell: echo out; echo err >&2; exit 3
      register: shelled
      ignore_errors: true
    - name: no such program
      command: /nonexistent/nvidia-smi -L
      register: missing
      ignore_errors: true
    - name: no such program on the PATH
      command: {argv: [no-such-program-here, "a b"]}
      register: unknown
      ignore_errors: true
    - name: not a program
      command: /etc/passwd
      register: not_a_program
      ignore_errors: true
    - name: a folder
      command: /etc
      register: folder
      ignore_errors: true
    - name: a shell builtin is no program
      command: cd /tmp
      register: builtin
      ignore_errors: true
    - name: a folder that is not there
      command: {cmd: pwd, chdir: /nonexistent-folder}
      register: nowhere
      ignore_errors: true
    - name: nor for a shell
      shell: {cmd: pwd, chdir: /nonexistent-folder}
      register: shell_nowhere
      ignore_errors: true
    - name: the shell says what it cannot find
      shell: /nonexistent/nvidia-smi
      register: shell_missing
      ignore_errors: true
    - name: already done
      command: {cmd: "echo x", creates: /etc}
      register: done
    - name: check mode
      command: echo x
      register: checked
      check_mode: true
"""


RESULTS_BOOK += "".join(
    f"    - {{name: 'shows {name}', debug: {{msg: \"{SHOWN}\"}},"
    f" vars: {{r: '{{{{ {name} }}}}'}}}}\n"
    for name in (
        *("ran", "argv", "shelled", "missing", "unknown", "not_a_program", "folder"),
        *("builtin", "nowhere", "shell_nowhere", "shell_missing", "done", "checked"),
    )
)


def test_what_a_command_registers_as_in_ansible(tmp_path):
    """`cmd`, `start`/`end`/`delta` (the container's clock), and what a program that
    cannot start registers: rc 2 (nothing there) or 13 (not an executable file),
    "Error executing command.", not changed; a `chdir` that fails: rc None, "Unable
    to change directory before execution."; a shell's missing program is the shell's
    rc 127, changed."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(RESULTS_BOOK)
    inputs = [RESULTS_CALL, RESULTS_BOOK]
    ours, theirs = differ.local_side_by_side("command-results", inputs, tmp_path, lambda _: [])
    assert ours == theirs
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert "start=True end=True delta=True" in shown["shows ran"]
    assert "start=absent" in shown["shows missing"]


WHERE_BOOK = r"""
- hosts: all
  gather_facts: false
  tasks:
    - {name: where, command: pwd, register: here}
    - {name: a relative path, shell: "cat data.txt", register: read}
    - name: shows
      debug: {msg: "{{ here.stdout == playbook_dir }} {{ read.stdout }}"}
"""


def test_local_runs_commands_in_the_playbook_folder_as_ansible_c_local_does(tmp_path):
    """Both tools are started from another folder (this process's)."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(WHERE_BOOK)
        (folder / "data.txt").write_text("beside the playbook\n")
    ours, theirs = differ.local_side_by_side("command-where", [1, WHERE_BOOK], tmp_path, _no_files)
    assert ours == theirs
    assert ours["tasks"][-1][2] == "True beside the playbook"


def _no_files(_: Path) -> list:
    return []


BREAKS_BOOK = r"""
- hosts: all
  gather_facts: false
  tasks:
    - name: a value ending in line breaks
      command: printf '[%s]' $PF_BREAKS ${PF_BREAKS}x
      environment: {PF_BREAKS: "a\n\n"}
      register: broken
    - name: shows
      debug: {msg: "{{ broken.stdout | to_json }}"}
"""


def test_an_expanded_value_keeps_its_final_line_breaks(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(BREAKS_BOOK)
    ours, theirs = differ.local_side_by_side(
        "command-breaks", [1, BREAKS_BOOK], tmp_path, _no_files
    )
    assert ours == theirs
    assert ours["tasks"][-1][2] == '"[a\\n\\n][a\\n\\nx]"'


LATE_BOOK = r"""
- hosts: all
  gather_facts: false
  tasks:
    - name: a background writer outlives the shell
      shell: "(sleep 0.3; echo late >&2) & echo now"
      register: late
    - name: shows
      debug: {msg: "{{ late.stdout }} | {{ late.stderr }} | {{ late.start is string }}"}
"""


def test_what_a_background_process_writes_later_is_its_stderr(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(LATE_BOOK)
    inputs = [1, LATE_BOOK]
    ours, theirs = differ.local_side_by_side("command-late", inputs, tmp_path, _no_files)
    assert ours == theirs
    assert ours["tasks"][-1][2] == "now | late | True"


STARTS_BOOK = r"""
- hosts: all
  gather_facts: false
  tasks:
    - {name: a missing interpreter, command: "{{ playbook_dir }}/bad.sh", register: a,
       ignore_errors: true}
    - {name: no interpreter line, command: "{{ playbook_dir }}/plain.sh", register: b,
       ignore_errors: true}
    - {name: an interpreter line, command: "{{ playbook_dir }}/good.sh", register: c}
    - {name: a spaced one with an option, command: "{{ playbook_dir }}/spaced.sh", register: d}
    - name: shows
      debug:
        msg: >-
          {{ [a, b, c, d] | map(attribute='rc') | list }}
          {{ [a, b, c, d] | map(attribute='msg') | list }}
          {{ [a, b, c, d] | map(attribute='changed') | list }} {{ d.stdout }}
"""
SCRIPTS = {
    "bad.sh": "#!/nonexistent/interpreter\necho hi\n",
    "plain.sh": "echo plain\n",
    "good.sh": "#!/bin/sh\necho good\n",
    "spaced.sh": "#! /bin/sh -e\necho spaced\n",
}


def test_what_execve_would_refuse_does_not_start(tmp_path):
    """As ansible-core: a `#!` interpreter that is not there is rc 2 and an executable
    that is neither ELF nor `#!` rc 8 (ENOEXEC), both "Error executing command." and
    unchanged; /bin/sh would have run the second as a script."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(STARTS_BOOK)
        for name, text in SCRIPTS.items():
            (folder / name).write_text(text)
            (folder / name).chmod(0o755)
    inputs = [1, STARTS_BOOK, SCRIPTS]
    ours, theirs = differ.local_side_by_side("command-starts", inputs, tmp_path, _no_files)
    assert ours == theirs
    assert ours["tasks"][-1][2].startswith("[2, 8, 0, 0]")
