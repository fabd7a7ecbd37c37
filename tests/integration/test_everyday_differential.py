"""Everyday playbook lines through ansible-playbook (`-c local`) and pctfleet
(`--local`): filters, a YAML string's backslashes inside `{{ }}`, key=value
arguments, None and lists inside text, copy's content, and what changed_when and
failed_when make of a command that exits non-zero. Compared: each task's status and
message, and the bytes of every file written (measured on ansible-core 2.19)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    path: /usr/local/lib/python3.11/site-packages
    banner: "nginx version: nginx/1.24.0 (Ubuntu)"
    users: [{name: ann, groups: [adm, gpu]}, {name: bob, groups: [gpu]}]
    settings: {b: 2, a: {y: [1], x: 1}}
    nothing: null
  tasks:
    - name: backreference in a double-quoted YAML string
      debug: {msg: "{{ path | regex_replace('python(\\d+)\\.(\\d+)', 'py\\1\\2') }}"}
    - name: backreference in a single-quoted one
      debug: {msg: '{{ path | regex_replace("python(\\d+)", "py\\\\1") }}'}
    - name: regex_search with a group
      debug: {msg: "{{ banner | regex_search('nginx/([0-9.]+)', '\\1') | first }}"}
    - name: regex_findall
      debug: {msg: "{{ banner | regex_findall('[0-9]+') }}"}
    - name: dict2items and items2dict
      debug: {msg: "{{ settings | dict2items | items2dict | to_json }}"}
    - name: ternary and flatten
      debug:
        msg: "{{ (users | length > 1) | ternary('many', 'one') }} {{ [1, [2, [3]]] | flatten }}"
    - name: combine recursive
      debug: {msg: "{{ settings | combine({'a': {'z': 3}}, recursive=True) | to_json }}"}
    - name: subelements
      debug: {msg: "{{ users | subelements('groups') | map('last') | list }}"}
    - name: hash and uuid
      debug: {msg: "{{ 'x' | hash('sha256') }} {{ 'x' | md5 }} {{ 'host1' | to_uuid }}"}
    - name: fqcn filter
      debug: {msg: "{{ path | ansible.builtin.basename }}"}
    - name: key=value with spaces in the braces
      file: path={{ playbook_dir }}/kv state=directory mode=0755
    - name: a value's escapes in key=value
      copy: content="a\tb\n" dest={{ playbook_dir }}/kv/tab.txt
    - name: command options among the words
      command: ls chdir={{ playbook_dir }}/kv
      register: listed
    - name: what ran in chdir
      debug: {msg: "{{ listed.stdout }}"}
    - name: None inside text
      copy: {content: "x{{ nothing }}x\n", dest: "{{ playbook_dir }}/kv/none.txt"}
    - name: a list with a newline after it
      copy:
        content: "{{ users | map(attribute='name') | list }}\n"
        dest: "{{ playbook_dir }}/kv/list.txt"
    - name: a mapping as content
      copy: {content: "{{ settings }}", dest: "{{ playbook_dir }}/kv/map.txt"}
    - name: to_nice_yaml
      copy: {content: "{{ settings | to_nice_yaml }}", dest: "{{ playbook_dir }}/kv/nice.yml"}
    - name: to_yaml
      copy: {content: "{{ settings | to_yaml }}", dest: "{{ playbook_dir }}/kv/terse.yml"}
    - name: non-zero, failed_when false
      shell: exit 3
      failed_when: false
      register: unfailed
    - name: non-zero, changed_when false and failed_when false
      shell: exit 3
      changed_when: false
      failed_when: false
    - name: what the first one registered
      debug: {msg: "{{ unfailed.rc }} {{ unfailed is changed }} {{ unfailed is failed }}"}
    - name: a changed_when that errs fails the task, and ignore_errors holds
      command: "false"
      register: erring
      changed_when: erring.stdout_lines[0] == 'created'
      ignore_errors: true
    - name: executable among a command's words
      command: echo hi executable=/bin/sh
      register: exe
    - name: what it printed
      debug: {msg: "{{ exe.stdout }}"}
"""


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted((root / "kv").rglob("*"))
            if p.is_file()}  # fmt: skip


def _theirs(kind: str, book: str, compute) -> Any:  # noqa: ANN001
    """Ansible's outcome, kept by its inputs (differ.cache_path)."""
    cached = differ.cache_path(kind, [CALL, book])
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        return json.loads(cached.read_text())
    outcome = compute()
    differ.keep(cached, outcome)
    return outcome


def _ours(book: Path, tmp_path: Path, more_env: dict | None = None) -> dict:
    """pctfleet run --local's one container: it must end with exit 0."""
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local"]
    argv += ["--json", "--journal-dir", str(tmp_path / "runs")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env=env | (more_env or {})
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run,) = json.loads(done.stdout)["containers"]
    return run


def test_everyday_lines_as_ansible_runs_them(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)

    def ansible() -> dict:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
        results = [(t["task"]["name"], t["hosts"]["localhost"]) for t in tasks]
        return {
            "tasks": [[n, differ.ansible_status(r), str(r.get("msg", ""))] for n, r in results],
            "files": _files(theirs_dir),
        }

    theirs = _theirs("everyday", BOOK, ansible)
    run = _ours(ours_dir / "book.yml", tmp_path)
    debug = {t["name"] for t in run["tasks"] if t["module"] == "debug"}
    ours = [[t["name"], t["status"], t["msg"] if t["name"] in debug else ""] for t in run["tasks"]]
    shown = [[n, s, m if n in debug else ""] for n, s, m in theirs["tasks"]]
    assert ours == shown
    assert _files(ours_dir) == theirs["files"]


LOOKUPS = r"""
- hosts: all
  gather_facts: false
  vars: {who: world}
  tasks:
    - name: env
      debug: {msg: "{{ lookup('env', 'LOOKED_UP') }}|{{ lookup('env', 'LOOKED_UP', 'NOT_SET_X') }}"}
    - name: file, from files/
      debug: {msg: "{{ lookup('file', 'key.txt') }}"}
    - name: pipe
      debug: {msg: "{{ lookup('pipe', 'echo one; echo two') }}"}
    - name: vars
      debug: {msg: "{{ lookup('vars', 'who') }} {{ lookup('vars', 'nope', default='dflt') }}"}
    - name: first_found, a play looks beside the playbook
      debug: {msg: "{{ lookup('first_found', ['nope.txt', 'top.txt']) | basename }}"}
    - name: first_found with paths
      debug:
        msg: "{{ lookup('first_found', files=['nope', 'key.txt'], paths=['files']) | basename }}"
    - name: fileglob
      debug: {msg: "{{ query('fileglob', '*.txt') | map('basename') | list }}"}
    - name: template
      debug: {msg: "{{ lookup('template', 'hello.j2') }}"}
    - name: query and wantlist
      debug:
        msg: "{{ q('ansible.builtin.env', 'LOOKED_UP') }} {{ lookup('env', 'LOOKED_UP', wantlist=1)
          }}"
"""


def _lookup_tree(folder: Path) -> None:
    (folder / "files").mkdir(parents=True)
    (folder / "templates").mkdir()
    (folder / "files/key.txt").write_text("secret text\n\n")
    (folder / "top.txt").write_text("top\n")
    (folder / "templates/hello.j2").write_text("hello {{ who }}\n")
    (folder / "book.yml").write_text(LOOKUPS)


def test_lookups_as_ansible_gives_them(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        _lookup_tree(folder)
    env = {"LOOKED_UP": "here"}

    def ansible() -> list:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir, env=env)
        return [str(t["hosts"]["localhost"].get("msg")) for t in tasks]

    theirs = _theirs("lookups", LOOKUPS, ansible)
    run = _ours(ours_dir / "book.yml", tmp_path, env)
    assert [t["msg"] for t in run["tasks"]] == theirs


PLAY_KEYS = r"""
- hosts: all
  gather_facts: false
  environment: {GREETING: hello, OTHER: play}
  ignore_errors: true
  tasks:
    - name: the play's environment
      shell: echo $GREETING $OTHER
      register: e
      notify: h
    - name: a task's environment over it
      shell: echo $GREETING $OTHER
      environment: {OTHER: task}
      register: o
    - name: fails, ignored by the play
      command: /bin/false
    - name: show
      debug: {msg: "{{ e.stdout }}|{{ o.stdout }}"}
  handlers:
    - name: h
      shell: echo $GREETING > h.txt
      args: {chdir: "{{ playbook_dir }}"}
"""


def test_play_keys_every_task_takes_as_in_ansible(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        folder.mkdir()
        (folder / "book.yml").write_text(PLAY_KEYS)

    def ansible() -> dict:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
        results = [(t["task"]["name"], t["hosts"]["localhost"]) for t in tasks]
        return {
            "tasks": [[n, differ.ansible_status(r)] for n, r in results],
            "shown": results[3][1]["msg"],
            "handler": (theirs_dir / "h.txt").read_text(),
        }

    theirs = _theirs("play-keys", PLAY_KEYS, ansible)
    run = _ours(ours_dir / "book.yml", tmp_path)
    assert [[t["name"], t["status"]] for t in run["tasks"]] == theirs["tasks"]
    assert run["tasks"][3]["msg"] == theirs["shown"] == "hello play|hello task"
    assert (ours_dir / "h.txt").read_text() == theirs["handler"]
