"""`file` with `recurse`, `state: hard` and `access_time`/`modification_time`, through
ansible-playbook (`-c local`) and pctfleet (`--local`), side by side in the same tree:
the statuses of a first and a second run, and after each every path's type, mode,
owner, group and link count, which paths share an inode, the times of the paths a task
sets them on, what the tasks register, and the words of the failures both report
(measured on ansible-core 2.19 under umask 022, in a zone with summer time).

Left out on purpose (docs/playbooks.md, "Differs from Ansible"): a touch that names
no time (pctfleet leaves an existing file's times), and a fixed time on a folder made
with its parents (Ansible fails there: it sets the time on the last folder before it
has made it)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
ZONE = "America/New_York"
OLD = "2020-05-05 05:05:05.5"  # every file's times before the runs
NEW_AFTER = 1_735_689_600 * 10**9  # 2025: a time past it was set to now (the fixed ones are older)
# What is there before the first run: out/ holds the tasks' paths, outside/ the targets
# of links that lead out of a recursed folder.
SETUP = r"""
set -e
mk() {  # a tree under out/$1 with links inside, out of it, to a folder and nowhere
  mkdir -p out/$1/s outside/$1/dir
  echo a > out/$1/f1; chmod 644 out/$1/f1; echo b > out/$1/f2; chmod 755 out/$1/f2
  echo c > out/$1/s/f3; chmod 600 out/$1/s/f3; chmod 755 out/$1/s
  ln -s f1 out/$1/lf; ln -s ../../outside/$1/file out/$1/lo; ln -s ../../outside/$1/dir out/$1/ld
  ln -s nowhere out/$1/lb
  echo o > outside/$1/file; chmod 600 outside/$1/file
  echo i > outside/$1/dir/in; chmod 600 outside/$1/dir/in; chmod 700 outside/$1/dir
}
for t in sym octal owners ownfollow; do mk $t; done
mkdir -p out/special; echo x > out/special/suid; chmod 4755 out/special/suid
echo x > out/special/sgid; chmod 2755 out/special/sgid; echo x > out/special/plain
mkdir -p out/done/a; echo x > out/done/a/f; chmod 640 out/done/a/f; chmod 750 out/done out/done/a
mkdir -p out/numeric/a; echo x > out/numeric/a/f
echo s > out/src; echo t > out/src2; echo o > out/other; echo o > out/other2; echo h > out/hsrc
ln out/hsrc out/hother; ln -s "$PWD/out/src" out/symsame; ln -s src2 out/symother; mkdir out/into
echo x > out/attrs; mkdir out/srcdir; echo x > out/timed
for f in t1 t2 t3 f1 f2 f3 f4; do echo x > out/$f; done
mkdir out/d1
find out outside -exec touch -h -d "$OLD" {} +
"""
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {o: "{{ playbook_dir }}/out", fixed: "202401020304.05", july: "202307010000.00"}
  tasks:
    - name: recurse a symbolic mode, links followed
      file: {path: "{{ o }}/sym", state: directory, recurse: true, mode: "u=rwX,g=rX,o="}
      register: r_sym
    - name: recurse an octal mode, links not followed
      file: {path: "{{ o }}/octal", state: directory, recurse: true, mode: "0640", follow: false}
    - name: recurse owner and group, links not followed
      file:
        path: "{{ o }}/owners"
        state: directory
        recurse: true
        owner: nobody
        group: nogroup
        follow: false
    - name: recurse owner, links followed
      file: {path: "{{ o }}/ownfollow", state: directory, recurse: true, owner: nobody}
    - name: recurse owner and symbolic mode over set-id bits
      file: {path: "{{ o }}/special", state: directory, recurse: true, owner: nobody, mode: "g+w"}
    - name: recurse on a tree already so
      file: {path: "{{ o }}/done", state: directory, recurse: true, mode: "u=rwX,g=rX,o="}
    - name: recurse a numeric group
      file: {path: "{{ o }}/numeric", state: directory, recurse: true, group: "65534"}
    - name: recurse without state makes the folder
      file: {path: "{{ o }}/made", recurse: true, mode: "0750"}
      register: r_made
    - name: hard link made
      file: {src: "{{ o }}/src", dest: "{{ o }}/h1", state: hard}
      register: r_h1
    - name: a file in the way
      file: {src: "{{ o }}/src", dest: "{{ o }}/other", state: hard}
      ignore_errors: true
      register: r_other
    - name: a file in the way, forced
      file: {src: "{{ o }}/src", dest: "{{ o }}/other2", state: hard, force: true}
    - name: another hard link in the way
      file: {src: "{{ o }}/src", dest: "{{ o }}/hother", state: hard}
      ignore_errors: true
      register: r_hother
    - name: another hard link in the way, forced
      file: {src: "{{ o }}/src", dest: "{{ o }}/hsrc", state: hard, force: true}
    - name: a symbolic link to src as written
      file: {src: "{{ o }}/src", dest: "{{ o }}/symsame", state: hard}
      register: r_symsame
    - name: a symbolic link elsewhere
      file: {src: "{{ o }}/src", dest: "{{ o }}/symother", state: hard}
    - name: into a folder
      file: {src: "{{ o }}/src2", dest: "{{ o }}/into", state: hard}
      register: r_into
    - name: src missing
      file: {src: "{{ o }}/nope", dest: "{{ o }}/h9", state: hard}
      ignore_errors: true
      register: r_nope
    - name: src a folder
      file: {src: "{{ o }}/srcdir", dest: "{{ o }}/h10", state: hard}
      ignore_errors: true
    - name: hard link with attributes
      file: {src: "{{ o }}/attrs", dest: "{{ o }}/h11", state: hard, mode: "0600", owner: nobody}
    - name: hard link with a time
      file:
        {src: "{{ o }}/timed", dest: "{{ o }}/h12", state: hard, modification_time: "{{ fixed }}"}
    - name: touch with both times fixed
      file:
        path: "{{ o }}/t1"
        state: touch
        modification_time: "202401020304.05"
        access_time: "202401020304.05"
    - name: touch naming one time (the other is now)
      file: {path: "{{ o }}/t2", state: touch, modification_time: preserve}
    - name: touch a new file with a fixed time
      file:
        {path: "{{ o }}/tnew", state: touch, modification_time: "{{ july }}", access_time: preserve}
    - name: touch both preserved
      file: {path: "{{ o }}/t3", state: touch, modification_time: preserve, access_time: preserve}
    - name: file mtime now
      file: {path: "{{ o }}/f1", modification_time: now}
    - name: file atime in its own format
      file:
        path: "{{ o }}/f2"
        access_time: "2023-03-04 05:06:07"
        access_time_format: "%Y-%m-%d %H:%M:%S"
    - name: file both now
      file: {path: "{{ o }}/f3", access_time: now, modification_time: now}
    - name: file time with a zone (dropped)
      file:
        path: "{{ o }}/f4"
        modification_time: "2024-01-02 03:04:05 +0500"
        modification_time_format: "%Y-%m-%d %H:%M:%S %z"
    - name: folder mtime fixed
      file: {path: "{{ o }}/d1", state: directory, modification_time: "202401020304.05"}
    - name: new folder with a fixed time
      file: {path: "{{ o }}/d2", state: directory, modification_time: "202401020304.05"}
    - name: what they register
      debug:
        msg: >-
          {{ r_sym.path | basename }} {{ r_sym.state }} | {{ r_made.state }} |
          {{ r_h1.dest | basename }} {{ r_h1.src | basename }} {{ r_h1.state }} |
          {{ r_symsame.state }} | {{ r_into.dest | relpath(o) }} {{ r_into.state }} |
          {{ r_other.msg }} | {{ r_hother.msg }} | {{ r_nope.msg }}
"""
# The paths whose times a task sets: their atime and mtime are compared.
TIMED = ["h12", "timed", "t1", "t2", "tnew", "t3", "f1", "f2", "f3", "f4", "d1", "d2"]


@contextlib.contextmanager
def _measured_as() -> Iterator[None]:
    """Both tools under the umask and zone the behaviour is measured in."""
    old_mask, old_zone = os.umask(0o022), os.environ.get("TZ")
    os.environ["TZ"] = ZONE
    try:
        yield
    finally:
        os.umask(old_mask)
        if old_zone is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old_zone


def _tree(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "book.yml").write_text(BOOK)
    subprocess.run(["sh", "-c", SETUP], cwd=folder, check=True, env={**os.environ, "OLD": OLD})


def _when(ns: int, old_ns: int) -> str:
    """A time as compared: the setup's (`old`), one a run set to now (`new`), or itself."""
    if ns == old_ns:
        return "old"
    return "new" if ns > NEW_AFTER else str(ns)


def _state(folder: Path) -> dict[str, list]:
    """Every path under out/ and outside/: type, mode, owner, group, link count, the
    first path with its inode (hard links), and for TIMED paths the times."""
    old_ns = int(subprocess.run(
        ["date", "-d", OLD, "+%s%N"], capture_output=True, text=True, check=True
    ).stdout)  # fmt: skip
    found, inodes = {}, {}
    paths = sorted(p for top in ("out", "outside") for p in (folder / top).rglob("*"))
    for path in paths:
        name = str(path.relative_to(folder))
        st = path.lstat()
        kind = "l" if path.is_symlink() else "d" if path.is_dir() else "f"
        first = inodes.setdefault(st.st_ino, name)
        row = [kind, f"{st.st_mode & 0o7777:04o}", st.st_uid, st.st_gid, st.st_nlink, first]
        if path.name in TIMED and path.parent.name == "out":
            row += [_when(st.st_atime_ns, old_ns), _when(st.st_mtime_ns, old_ns)]
        found[name] = row
    return found


def _ansible_rows(tasks: list[dict]) -> list[list[str]]:
    rows = []
    for task in tasks:
        result = task["hosts"]["localhost"]
        msg = str(result.get("msg", "")) if task["task"]["name"] == "what they register" else ""
        rows.append([task["task"]["name"], differ.ansible_status(result), msg])
    return rows


def _ours_rows(tasks: list[dict]) -> list[list[str]]:
    rows = []
    for task in tasks:
        msg = task["msg"] if task["name"] == "what they register" else ""
        status = "failed" if task.get("ignored") else task["status"]
        rows.append([task["name"], status, msg])
    return rows


def test_recurse_hard_links_and_times_as_in_ansible(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"

    def ansible() -> dict:
        runs = []
        for _ in range(2):
            tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
            runs.append({"tasks": _ansible_rows(tasks), "state": _state(theirs_dir)})
        return {"runs": runs}

    with _measured_as():
        for folder in (theirs_dir, ours_dir):
            _tree(folder)
        theirs = differ.cached(
            "file-more", [CALL, SETUP, BOOK, OLD, NEW_AFTER, ZONE, TIMED], ansible
        )
        ours = []
        for n in range(2):
            tasks = differ.pctfleet_local(ours_dir / "book.yml", tmp_path / f"runs{n}")
            ours.append({"tasks": _ours_rows(tasks), "state": _state(ours_dir)})
    for n, (mine, want) in enumerate(zip(ours, theirs["runs"], strict=True)):
        assert mine["tasks"] == want["tasks"], n
        differs = {
            path: (row, want["state"].get(path))
            for path, row in mine["state"].items()
            if row != want["state"].get(path)
        }
        assert mine["state"] == want["state"], (n, differs)
    second = {row[0]: row[1] for row in theirs["runs"][1]["tasks"]}
    assert second["recurse a symbolic mode, links followed"] == "ok"
    assert second["file mtime now"] == "changed"  # `now` is a change on every run


BAD = {
    "a time not in its format": (
        '{path: "{{ playbook_dir }}/x", modification_time: "2024-01-02"}',
        "Error while obtaining timestamp for time 2024-01-02 using format %Y%m%d%H%M.%S: "
        "time data '2024-01-02' does not match format '%Y%m%d%H%M.%S'",
    ),
    "a bad directive": (
        '{path: "{{ playbook_dir }}/x", access_time: "2024", access_time_format: "%Q"}',
        "Error while obtaining timestamp for time 2024 using format %Q: "
        "'Q' is a bad directive in format '%Q'",
    ),
    "recurse on a file": (
        '{path: "{{ playbook_dir }}/x", state: file, recurse: true}',
        "recurse option requires state to be 'directory'",
    ),
    "src without a link": (
        '{path: "{{ playbook_dir }}/x", src: "{{ playbook_dir }}/y", state: file}',
        "src option requires state to be 'link' or 'hard'",
    ),
    "a state Ansible has not": ('{path: "{{ playbook_dir }}/x", state: nope}', "nope"),
}


def test_bad_arguments_are_refused_before_anything_runs(tmp_path):
    """Ansible fails these tasks when it reaches them (the words are its own); pctfleet
    refuses the playbook when it reads it: exit 4, one line naming file and line."""
    for name, (args, words) in BAD.items():
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        book = folder / "book.yml"
        book.write_text(f"- hosts: all\n  gather_facts: false\n  tasks:\n    - file: {args}\n")
        (folder / "x").write_text("x\n")
        before = (folder / "x").stat()
        argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local"]
        argv += ["--json", "--journal-dir", str(tmp_path / "runs")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 4, (name, done.stderr)
        assert f"{book}:4" in done.stderr, (name, done.stderr)
        assert words in done.stderr, (name, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)
        assert (folder / "x").stat().st_mtime_ns == before.st_mtime_ns


def test_ansible_fails_the_bad_arguments_with_those_words(tmp_path):
    """The words above are Ansible's (each task of this book fails, ignored)."""
    book = "- hosts: all\n  gather_facts: false\n  tasks:\n"
    for args, _ in BAD.values():
        book += f"    - file: {args}\n      ignore_errors: true\n"
    (tmp_path / "book.yml").write_text(book)
    (tmp_path / "x").write_text("x\n")

    def ansible() -> dict:
        tasks = differ.ansible_local(tmp_path / "book.yml", tmp_path)
        return {"msgs": [t["hosts"]["localhost"].get("msg", "") for t in tasks]}

    theirs = differ.cached("file-more-bad", [CALL, book], ansible)
    for (name, (_, words)), msg in zip(BAD.items(), theirs["msgs"], strict=True):
        assert words in msg, (name, msg)


SETID_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {o: "{{ playbook_dir }}/out"}
  tasks:
    - name: owner and the same set-uid mode
      file: {path: "{{ o }}/suid", owner: nobody, mode: "4755"}
    - {name: group and a set-gid mode, file: {path: "{{ o }}/sgid", group: nogroup, mode: "2775"}}
    - {name: owner and no mode, file: {path: "{{ o }}/plain", owner: nobody}}
    - name: copy with owner and a set-uid mode
      copy: {content: "x\n", dest: "{{ o }}/copied", owner: nobody, mode: "4755"}
    - name: lineinfile with owner and a set-uid mode
      lineinfile: {path: "{{ o }}/lines", line: x, owner: nobody, mode: "4755"}
    - name: owner and a symbolic mode
      file: {path: "{{ o }}/symbolic", owner: nobody, mode: "g+w"}
    - name: copy with owner and a symbolic mode
      copy: {content: "x\n", dest: "{{ o }}/symcopy", owner: nobody, mode: "u+x"}
"""


def test_owner_is_set_before_the_mode_as_ansible_sets_them(tmp_path):
    """chown drops a file's set-id bits: set after it, the mode keeps them."""

    def ground(folder: Path) -> None:
        out = folder / "out"
        out.mkdir(parents=True)
        for name, mode in (("suid", 0o4755), ("sgid", 0o2775), ("plain", 0o4755)):
            (out / name).write_text("x\n")
            (out / name).chmod(mode)
        (out / "copied").write_text("x\n")
        (out / "copied").chmod(0o4755)
        (out / "lines").write_text("x\n")
        (out / "lines").chmod(0o4755)
        for name, mode in (("symbolic", 0o6755), ("symcopy", 0o4755)):
            (out / name).write_text("x\n")
            (out / name).chmod(mode)
        (folder / "book.yml").write_text(SETID_BOOK)

    def modes(folder: Path) -> dict:
        return {p.name: f"{p.stat().st_mode & 0o7777:04o}" for p in (folder / "out").iterdir()}

    for side in ("ansible", "pctfleet"):
        ground(tmp_path / side)
    ours, theirs = differ.local_side_by_side("file-setid", [1, SETID_BOOK], tmp_path, modes)
    assert ours == theirs
    assert ours["files"]["suid"] == "4755" and ours["files"]["plain"] == "0755"
    assert ours["files"]["symbolic"] == "0775" and ours["files"]["symcopy"] == "0755"


BACKUPS_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {f: "{{ playbook_dir }}/out/app.conf"}
  tasks:
    - {name: copy, copy: {content: "one\n", dest: "{{ f }}", backup: true}, register: a}
    - {name: lineinfile, lineinfile: {path: "{{ f }}", line: two, backup: true}, register: b}
    - name: replace
      replace: {path: "{{ f }}", regexp: one, replace: uno, backup: true}
      register: c
    - name: three names
      debug: {msg: "{{ [a.backup_file, b.backup, c.backup_file] | unique | length }}"}
"""


def test_backups_made_in_one_second_keep_every_old_content(tmp_path):
    """Three edits with `backup` in a row: three backups, the original among them."""

    def backups(folder: Path) -> list[str]:
        return sorted(p.read_text() for p in (folder / "out").glob("app.conf.*~"))

    for side in ("ansible", "pctfleet"):
        (tmp_path / side / "out").mkdir(parents=True)
        (tmp_path / side / "out/app.conf").write_text("original\n")
        (tmp_path / side / "book.yml").write_text(BACKUPS_BOOK)
    ours, theirs = differ.local_side_by_side("file-backups", [1, BACKUPS_BOOK], tmp_path, backups)
    assert ours == theirs
    assert ours["files"] == ["one\n", "one\ntwo\n", "original\n"]


LINKS_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {o: "{{ playbook_dir }}/out"}
  tasks:
    - name: to a missing target
      file: {src: missing-target, dest: "{{ o }}/l1", state: link}
      ignore_errors: true
    - name: to a missing absolute target
      file: {src: /nonexistent/abs, dest: "{{ o }}/l2", state: link}
      ignore_errors: true
    - name: forced
      file: {src: missing-target, dest: "{{ o }}/l3", state: link, force: true}
    - name: to a target beside it
      file: {src: v1, dest: "{{ o }}/current", state: link}
    - name: its target goes
      file: {path: "{{ o }}/v1", state: absent}
    - name: the same link again
      file: {src: v1, dest: "{{ o }}/current", state: link}
      ignore_errors: true
"""


def test_a_link_to_a_missing_target_needs_force(tmp_path):
    """As ansible-core: "src file does not exist, use 'force=yes' ...", named relative
    to the link's folder, also for a link already there whose target went."""

    def links(folder: Path) -> dict:
        out = folder / "out"
        return {p.name: os.readlink(p) for p in sorted(out.iterdir()) if p.is_symlink()}

    for side in ("ansible", "pctfleet"):
        (tmp_path / side / "out").mkdir(parents=True)
        (tmp_path / side / "out/v1").write_text("v1\n")
        (tmp_path / side / "book.yml").write_text(LINKS_BOOK)
    ours, theirs = differ.local_side_by_side("file-links", [1, LINKS_BOOK], tmp_path, links)
    for row in (*ours["tasks"], *theirs["tasks"]):  # Ansible's is kept from another folder
        row[2] = re.sub(r"/\S*/(ansible|pctfleet)/out/", "ROOT/out/", row[2])
    assert ours == theirs
    assert ours["tasks"][0][1:] == [
        "failed",
        "src file does not exist, use 'force=yes' if you really want to create the link: "
        "ROOT/out/missing-target",
    ]


REGISTERS_BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    o: "{{ playbook_dir }}/out"
    unread: [size, diff, invocation, msg]  # size is not read; msg is pctfleet's own
  tasks:
    - {name: a folder, file: {path: "{{ o }}/d", state: directory, mode: "0750"}, register: a}
    - {name: a mode, file: {path: "{{ o }}/f", mode: "g+w"}, register: b}
    - {name: touched, file: {path: "{{ o }}/t", state: touch}, register: c}
    - {name: a link, file: {src: f, dest: "{{ o }}/l", state: link}, register: d}
    - {name: absent, file: {path: "{{ o }}/gone", state: absent}, register: e}
    - {name: again, file: {path: "{{ o }}/d", state: directory, mode: "0750"}, register: g}
"""
REGISTERS_BOOK += "".join(
    f"    - name: shows {name}\n"
    f"      debug: {{msg: \"{{{{ {name} | dict2items | rejectattr('key', 'in', unread)"
    f' | items2dict | to_json(sort_keys=True) }}}}"}}\n'
    for name in "abcdeg"
)


def test_file_registers_what_ansible_s_file_module_registers(tmp_path):
    for side in ("ansible", "pctfleet"):
        (tmp_path / side / "out").mkdir(parents=True)
        (tmp_path / side / "out/f").write_text("x\n")
        (tmp_path / side / "book.yml").write_text(REGISTERS_BOOK)
    ours, theirs = differ.local_side_by_side(
        "file-registers", [1, REGISTERS_BOOK], tmp_path, lambda _: []
    )
    for row in (*ours["tasks"], *theirs["tasks"]):
        row[2] = re.sub(r"/\S*/(ansible|pctfleet)/out/", "ROOT/out/", row[2])
    assert ours == theirs
    shown = {row[0]: row[2] for row in ours["tasks"]}
    assert '"mode": "0664"' in shown["shows b"] and '"rc"' not in shown["shows g"]


EDIT_MSG_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {d: "{{ playbook_dir }}/out"}
  tasks:
    - {name: line and mode, lineinfile: {path: "{{ d }}/a", line: two, mode: "0600"}}
    - {name: mode only, lineinfile: {path: "{{ d }}/b", line: one, mode: "0600"}}
    - {name: line only, lineinfile: {path: "{{ d }}/c", line: two}}
    - name: replaced and mode
      replace: {path: "{{ d }}/d", regexp: one, replace: uno, mode: "0600"}
    - {name: block and mode, blockinfile: {path: "{{ d }}/e", block: x, mode: "0600"}}
    - name: created with a mode
      lineinfile: {path: "{{ d }}/new", line: x, create: true, mode: "0600"}
    - name: created with the umask's mode
      lineinfile: {path: "{{ d }}/new2", line: x, create: true, mode: "0644"}
"""


def test_an_edit_that_also_changes_the_mode_says_so(tmp_path):
    """ansible-core's msg: "line added and ownership, perms or SE linux context changed"."""
    for side in ("ansible", "pctfleet"):
        out = tmp_path / side / "out"
        out.mkdir(parents=True)
        for name in "abcde":
            (out / name).write_text("one\n")
            (out / name).chmod(0o644)
        (tmp_path / side / "book.yml").write_text(EDIT_MSG_BOOK)
    ours, theirs = differ.local_side_by_side(
        "edit-msgs", [1, EDIT_MSG_BOOK], tmp_path, lambda _: []
    )
    assert ours == theirs
    assert ours["tasks"][0][2] == "line added and ownership, perms or SE linux context changed"
