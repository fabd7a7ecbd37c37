"""Symbolic modes through ansible-playbook (`-c local`) and pctfleet (`--local`): copy,
template, file, lineinfile, blockinfile and replace with `u=rw,g=r,o=`, `g+w`, `a+x`,
`+x`, `=`, `X` and several clauses, on new and existing files and folders; the
statuses of two runs (the second changes nothing) and each path's `stat -c %a` after
each run, compared (measured on ansible-core 2.19 under umask 022). Then Ansible's own
resolver against pctfleet's on generated modes, and a bad mode's error."""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import differ

from pctfleet.errors import PlaybookError
from pctfleet.modules.modes import file_mode

CALL = 1  # bump when how Ansible is called here changes
# Paths there before the first run: name -> (mode, content; None for a folder).
EXISTING = {
    "e666": (0o666, "x\n"),
    "e644": (0o644, "x\n"),
    "e744": (0o744, "x\n"),
    "e600": (0o600, "x\n"),
    "esuid": (0o4755, "x\n"),
    "block": (0o600, "a\nb\n"),
    "repl": (0o666, "foo\n"),
    "edir": (0o755, None),
    "edir2": (0o644, None),  # no x bit: only its being a folder lets X add one
    "esticky": (0o1777, None),
    "etarget": (0o600, "t\n"),
}
LINKS = {"elink": "etarget"}  # a link copy replaces with a new file (the target is kept)
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {o: "{{ playbook_dir }}/out"}
  tasks:
    - {name: copy new u=rw g=r o=, copy: {content: "x\n", dest: "{{ o }}/c1", mode: "u=rw,g=r,o="}}
    - {name: copy new g+w, copy: {content: "x\n", dest: "{{ o }}/c2", mode: "g+w"}}
    - {name: copy new a+x, copy: {content: "x\n", dest: "{{ o }}/c3", mode: "a+x"}}
    - {name: copy new +x, copy: {content: "x\n", dest: "{{ o }}/c4", mode: "+x"}}
    - {name: copy new u=rwx go=rx, copy: {content: "x\n", dest: "{{ o }}/c5", mode: "u=rwx,go=rx"}}
    - {name: copy new =r, copy: {content: "x\n", dest: "{{ o }}/c6", mode: "=r"}}
    - {name: copy new u=rwX, copy: {content: "x\n", dest: "{{ o }}/c7", mode: "u=rwX,g=rX,o="}}
    - {name: copy clauses, copy: {content: "x\n", dest: "{{ o }}/c8", mode: "u=rw-w+x,g=u,o=g-x"}}
    - {name: copy new s and t, copy: {content: "x\n", dest: "{{ o }}/c9", mode: "g+s,o+t,u+s"}}
    - {name: copy new bare u, copy: {content: "x\n", dest: "{{ o }}/c10", mode: "u"}}
    - {name: copy new =, copy: {content: "x\n", dest: "{{ o }}/c11", mode: "="}}
    - {name: copy new -w, copy: {content: "x\n", dest: "{{ o }}/c12", mode: "-w"}}
    - {name: copy new +w, copy: {content: "x\n", dest: "{{ o }}/c13", mode: "+w"}}
    - {name: copy new =rw, copy: {content: "x\n", dest: "{{ o }}/c14", mode: "=rw"}}
    - {name: copy same content go-w, copy: {content: "x\n", dest: "{{ o }}/e666", mode: "go-w"}}
    - {name: copy new content g+r, copy: {content: "y\n", dest: "{{ o }}/e600", mode: "g+r"}}
    - {name: copy onto a link g+w, copy: {content: "x\n", dest: "{{ o }}/elink", mode: "g+w"}}
    - {name: file new folder, file: {path: "{{ o }}/d1", state: directory, mode: "u=rwx,g=rx,o="}}
    - {name: file new folders, file: {path: "{{ o }}/d2/sub", state: directory, mode: "g+w"}}
    - {name: file folder X, file: {path: "{{ o }}/d3", state: directory, mode: "u=rwX,g=rX,o=X"}}
    - {name: file existing g+w, file: {path: "{{ o }}/e644", mode: "g+w"}}
    - {name: file existing x go=rX, file: {path: "{{ o }}/e744", mode: "go=rX"}}
    - {name: file existing folder g+w, file: {path: "{{ o }}/edir", state: directory, mode: "g+w"}}
    - {name: file folder without state a+X, file: {path: "{{ o }}/edir2", mode: "a+X"}}
    - {name: file setuid u=rwx, file: {path: "{{ o }}/esuid", mode: "u=rwx"}}
    - {name: file sticky o=rwx, file: {path: "{{ o }}/esticky", state: directory, mode: "o=rwx"}}
    - name: lineinfile creates
      lineinfile: {path: "{{ o }}/l1", line: hi, create: true, mode: "u=rw,g=r,o="}
    - name: lineinfile creates g+w
      lineinfile: {path: "{{ o }}/l2", line: hi, create: true, mode: "g+w"}
    - {name: blockinfile g+w, blockinfile: {path: "{{ o }}/block", block: z, mode: "g+w"}}
    - name: replace o-r
      replace: {path: "{{ o }}/repl", regexp: foo, replace: bar, mode: "o-r"}
    - {name: template new, template: {src: t.j2, dest: "{{ o }}/tp", mode: "u=rw,go=r"}}
    - {name: template new a+x, template: {src: t.j2, dest: "{{ o }}/tp2", mode: "a+x"}}
"""
TEMPLATE = "hello {{ 1 + 1 }}\n"


@contextlib.contextmanager
def _umask_022() -> Iterator[None]:
    """Both tools under the umask the modes are measured with (pctfleet assumes 022)."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    (folder / "templates").mkdir()
    (folder / "templates" / "t.j2").write_text(TEMPLATE)
    (folder / "book.yml").write_text(BOOK)
    for name, (mode, content) in EXISTING.items():
        path = folder / "out" / name
        if content is None:
            path.mkdir()
        else:
            path.write_text(content)
        os.chmod(path, mode)
    for name, target in LINKS.items():
        (folder / "out" / name).symlink_to(target)


def _modes(folder: Path) -> dict[str, str]:
    """`stat -c %a` of every path under out/, by its path there."""
    paths = sorted(p.relative_to(folder / "out") for p in (folder / "out").rglob("*"))
    done = subprocess.run(
        ["stat", "-c", "%a", "--", *map(str, paths)],
        cwd=folder / "out",
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(zip(map(str, paths), done.stdout.split(), strict=True))


def test_symbolic_modes_resolve_and_settle_as_in_ansible(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        _tree(folder)

    def ansible() -> dict:
        runs = []
        for _ in range(2):
            tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
            statuses = [differ.ansible_status(t["hosts"]["localhost"]) for t in tasks]
            runs.append({"statuses": statuses, "modes": _modes(theirs_dir)})
        return {"runs": runs}

    existing = {name: [mode, content] for name, (mode, content) in EXISTING.items()}
    with _umask_022():
        inputs = [CALL, BOOK, TEMPLATE, existing, LINKS]
        theirs = differ.cached("symbolic-modes", inputs, ansible)
        ours = []
        for n in range(2):
            tasks = differ.pctfleet_local(ours_dir / "book.yml", tmp_path / f"runs{n}")
            ours.append({"statuses": [t["status"] for t in tasks], "modes": _modes(ours_dir)})
    names = [t["name"] for t in tasks]
    for n, (mine, want) in enumerate(zip(ours, theirs["runs"], strict=True)):
        mine_named = list(zip(names, mine["statuses"], strict=True))
        assert mine_named == list(zip(names, want["statuses"], strict=True)), n
        assert mine["modes"] == want["modes"], n
    assert set(theirs["runs"][1]["statuses"]) == {"ok"}


# Ansible's own resolver (AnsibleModule._symbolic_mode_to_octal) on each case, in its venv.
RESOLVER = """
import json, os, stat, sys
from ansible.module_utils.basic import AnsibleModule
os.umask(0o022)
class Stat:
    def __init__(self, mode): self.st_mode = mode
out = []
for text, current, directory in json.load(sys.stdin):
    kind = stat.S_IFDIR if directory else stat.S_IFREG
    try:
        out.append(AnsibleModule._symbolic_mode_to_octal(Stat(kind | current), text))
    except Exception:
        out.append(None)
print(json.dumps(out))
"""


def _generated(count: int) -> list[list]:
    """Modes on random modes of files and folders: half well-formed clauses, half any
    string of chmod's letters (most of them bad)."""
    pick = random.Random(2019)
    letters = "ugoa" * 3 + "+-=" * 4 + "rwxXst" * 2 + ","

    def clause() -> str:
        users = pick.choice(["", "a", "u", "g", "o", "ug", "go", "uo", "ugo"])
        actions = [
            pick.choice("+-=") + "".join(pick.sample("rwxXstugo", pick.randint(0, 3)))
            for _ in range(pick.randint(1, 2))
        ]
        return users + "".join(actions)

    def text() -> str:
        if pick.random() < 0.5:
            return ",".join(clause() for _ in range(pick.randint(1, 3)))
        return "".join(pick.choice(letters) for _ in range(pick.randint(1, 12)))

    return [[text(), pick.randint(0, 0o7777), pick.random() < 0.5] for _ in range(count)]


def _ours(text: str, current: int, directory: bool) -> int | None:
    try:
        return file_mode(text, "t").resolve(current, directory)
    except PlaybookError:
        return None


def test_the_resolver_agrees_with_ansible_s_on_generated_modes():
    cases = _generated(5000)

    def ansible() -> dict:
        venv = differ.ansible_env.ensure_venv()
        done = subprocess.run(
            [str(venv / "bin/python"), "-c", RESOLVER],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            check=True,
        )
        return {"resolved": json.loads(done.stdout)}

    theirs = differ.cached("symbolic-modes-resolver", [CALL, RESOLVER, cases], ansible)
    assert 500 < theirs["resolved"].count(None) < 4000  # both kinds, many of each
    for case, want in zip(cases, theirs["resolved"], strict=True):
        assert _ours(*case) == want, case


BAD_BOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - {name: bad mode, copy: {content: "x\\n", dest: "{{ playbook_dir }}/bad", mode: "u=rwz"}}
"""


def test_a_bad_mode_is_refused_in_ansible_s_words(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        folder.mkdir()
        (folder / "book.yml").write_text(BAD_BOOK)

    def ansible() -> dict:
        (task,) = differ.ansible_local(theirs_dir / "book.yml", theirs_dir, rc=2)
        result = task["hosts"]["localhost"]
        return {"failed": result.get("failed"), "words": [result["msg"], result["details"]]}

    theirs = differ.cached("symbolic-modes-bad", [CALL, BAD_BOOK], ansible)
    assert theirs["failed"] is True
    argv = [sys.executable, "-m", "pctfleet", "run", str(ours_dir / "book.yml"), "--local"]
    argv += ["--json", "--journal-dir", str(tmp_path / "runs")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    # Refused when the playbook is read (exit 4, file and line), before anything is written.
    assert done.returncode == 4, done.stderr
    assert f"{ours_dir / 'book.yml'}:5" in done.stderr
    for words in theirs["words"]:
        assert words in done.stderr, (words, done.stderr)
    assert not (ours_dir / "bad").exists()
