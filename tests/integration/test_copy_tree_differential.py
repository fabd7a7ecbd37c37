"""`copy` of folders, `remote_src` and `directory_mode`, through ansible-playbook
(`-c local`) and pctfleet (`--local`): a folder with a final / (its contents) and
without (the folder itself), into new and existing folders (files dest holds besides
stay), with `mode`, `directory_mode` (symbolic too), `owner`, `group`, `preserve`,
`force: false`, links in the source (to a file, out of the folder, dangling, to a
folder), an empty folder, missing folders above dest; `remote_src` of a file (new,
replaced, preserved, into a dest ending in /) and of a folder (new, into one that holds
more, with owner). Compared: each task's status on a first and a second run, what the
tasks register (printed by debug tasks), and the tree left (paths, types, modes,
owners, contents, link targets). pctfleet's second run costs one call (measured on
ansible-core 2.19.14 under umask 022)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import differ
import pytest

CALL = 2  # bump when how Ansible is called here changes
SHOW = "| replace(playbook_dir, '')"
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {o: "{{ playbook_dir }}/out", i: "{{ playbook_dir }}/in"}
  tasks:
    - name: contents into a new folder
      copy: {src: conf/, dest: "{{ o }}/slash"}
      register: r
    - name: its result
      debug: {msg: "{{ r.dest SHOW }} {{ r.src SHOW }} {{ r.changed }}"}
    - name: the folder itself into a new folder
      copy: {src: conf, dest: "{{ o }}/noslash"}
      register: r
    - name: the folder's result
      debug: {msg: "{{ r.dest SHOW }} {{ r.src SHOW }} {{ r.changed }}"}
    - name: into a folder that holds more, directory_mode for the source's folders
      copy: {src: conf/, dest: "{{ o }}/existing", directory_mode: "0755"}
    - name: attributes, folders above made
      copy:
        src: conf/
        dest: "{{ o }}/made/deeper/"
        mode: "0640"
        directory_mode: "0750"
        owner: nobody
        group: nogroup
    - name: symbolic modes
      copy:
        {src: conf/, dest: "{{ o }}/symbolic", mode: "u=rw,g=r,o=", directory_mode: "u=rwx,g=rx,o="}
    - name: preserve
      copy: {src: conf/, dest: "{{ o }}/preserve", mode: preserve}
    - name: "force: false"
      copy: {src: conf/, dest: "{{ o }}/kept", force: false}
    - name: one file
      copy: {src: one/, dest: "{{ o }}/one"}
      register: r
    - name: one file's result
      debug:
        msg: "{{ r.dest SHOW }} {{ r.checksum }} {{ r.md5sum | default('-') }} {{ r.size }}
          {{ r.mode }} {{ r.state }} {{ r.path | default('-') SHOW }}"
    - name: a file where the source has a folder
      copy: {src: clash/, dest: "{{ o }}/clash"}
      ignore_errors: true
    - name: remote file, new
      copy: {src: "{{ i }}/f", dest: "{{ o }}/r_new", remote_src: true}
      register: r
    - name: remote file's result
      debug:
        msg: "{{ r.dest SHOW }} {{ r.src SHOW }} {{ r.checksum }} {{ r.size }} {{ r.state }}
          {{ r.mode }} {{ r.owner }} {{ r.group }}"
    - name: remote file, replacing one
      copy: {src: "{{ i }}/f", dest: "{{ o }}/r_diff", remote_src: true}
    - name: remote file, preserve and owner
      copy:
        {src: "{{ i }}/f", dest: "{{ o }}/r_pres", remote_src: true, mode: preserve, owner: nobody}
    - name: remote file into a dest ending in /
      copy:
        {src: "{{ i }}/f", dest: "{{ o }}/r_made/deep/", remote_src: true, directory_mode: "0700"}
      register: r
    - name: that result
      debug: {msg: "{{ r.dest SHOW }} {{ r.mode }} {{ r.changed }}"}
    - name: remote folder contents into a new folder
      copy: {src: "{{ i }}/tree/", dest: "{{ o }}/rt_new", remote_src: true}
      register: r
    - name: remote folder's result
      debug: {msg: "{{ r.src SHOW }} {{ r.state }} {{ r.changed }}"}
    - name: remote folder with links into a new folder
      copy: {src: "{{ i }}/linked", dest: "{{ o }}/rt_links", remote_src: true}
    - name: remote folder into one that holds more, with an owner
      copy: {src: "{{ i }}/tree", dest: "{{ o }}/rt_part", remote_src: true, owner: nobody}
""".replace("SHOW", SHOW)


def _tree(folder: Path) -> None:
    """The playbook's folder: the sources (files/ on the controller, in/ for remote_src)
    and what `out/` holds before the first run."""
    conf = folder / "files/conf"
    (conf / "sub/deep").mkdir(parents=True)
    (conf / "empty").mkdir()
    (conf / "a.txt").write_text("a\n")
    (conf / "sub/b.txt").write_text("b\n")
    (conf / "sub/b.txt").chmod(0o600)
    (conf / "sub").chmod(0o700)  # a source folder's mode is not copied
    (conf / "sub/deep/c.txt").write_text("c\n")
    (folder / "outside/d").mkdir(parents=True)
    (folder / "outside/o.txt").write_text("outside\n")
    (folder / "outside/d/od.txt").write_text("in a linked folder\n")
    (conf / "link_in").symlink_to("a.txt")
    (conf / "link_out").symlink_to("../../outside/o.txt")
    (conf / "dangling").symlink_to("nowhere")
    (conf / "dirlink").symlink_to("sub")
    (conf / "dirlink_out").symlink_to("../../outside/d")
    (folder / "files/one").mkdir()
    (folder / "files/one/f").write_text("one\n")
    (folder / "files/clash/sub").mkdir(parents=True)
    (folder / "files/clash/sub/b").write_text("b\n")
    out = folder / "out"
    (out / "existing/sub").mkdir(parents=True)
    (out / "existing").chmod(0o700)  # dest itself, once there, is left alone
    (out / "existing/sub").chmod(0o700)
    (out / "existing/keep").write_text("not in the source\n")
    (out / "existing/a.txt").write_text("old\n")
    (out / "existing/a.txt").chmod(0o600)  # replaced, its mode kept
    (out / "kept").mkdir()
    (out / "kept/a.txt").write_text("kept\n")
    (out / "clash").mkdir()
    (out / "clash/sub").write_text("a file\n")
    (out / "r_diff").write_text("old\n")
    (out / "rt_part").mkdir()
    (out / "rt_part/extra").write_text("extra\n")
    remote = folder / "in"
    (remote / "tree/sub/e").mkdir(parents=True)
    (remote / "f").write_text("f\n")
    (remote / "f").chmod(0o600)
    (remote / "tree/a").write_text("a\n")
    (remote / "tree/a").chmod(0o640)
    (remote / "tree/sub/b").write_text("b\n")
    (remote / "tree/sub").chmod(0o700)
    (remote / "linked").mkdir()
    (remote / "linked/t").write_text("t\n")
    (remote / "linked/to_t").symlink_to("t")
    (remote / "linked/nowhere").symlink_to("none")
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> dict[str, list]:
    """Every path under out/: its type, mode, owner, group, and content or link target."""
    found = {}
    for here, dirs, names in os.walk(root / "out"):
        for name in sorted([*dirs, *names]):
            path = Path(here) / name
            info = path.lstat()
            kind = "l" if path.is_symlink() else "d" if path.is_dir() else "f"
            body = os.readlink(path) if kind == "l" else path.read_text() if kind == "f" else ""
            mode = "" if kind == "l" else f"{info.st_mode & 0o7777:04o}"
            owner = f"{path.owner()}:{path.group()}" if kind != "l" else ""
            found[str(path.relative_to(root / "out"))] = [kind, mode, owner, body]
    return found


def _rows(tasks: list) -> list[list[str]]:
    return [[name, status, msg if name.endswith("result") else ""] for name, status, msg in tasks]


def _ansible(folder: Path) -> dict:
    runs = []
    for _ in range(2):
        tasks = differ.ansible_local(folder / "book.yml", folder)
        hosts = [(t["task"]["name"], t["hosts"]["localhost"]) for t in tasks]
        runs.append(_rows([[n, differ.ansible_status(h), str(h.get("msg", ""))] for n, h in hosts]))
    return {"first": runs[0], "second": runs[1], "files": _files(folder)}


def _pctfleet(folder: Path, journal: Path) -> dict:
    argv = [sys.executable, "-m", "pctfleet", "run", str(folder / "book.yml"), "--local"]
    argv += ["--json", "--journal-dir", str(journal)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    runs = []
    for _ in range(2):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
        assert done.stdout.strip(), done.stderr[-2000:]
        (run,) = json.loads(done.stdout)["containers"]
        runs.append(run)
    rows = [_rows([[t["name"], t["status"], t["msg"]] for t in run["tasks"]]) for run in runs]
    out = {"first": rows[0], "second": rows[1], "files": _files(folder)}
    return out | {"calls": runs[1]["remote_calls"]}


@pytest.mark.skipif(os.geteuid() != 0, reason="owner: nobody needs root")
def test_folders_and_remote_src_as_in_ansible(tmp_path):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        _tree(folder)

    theirs = differ.cached("copy_tree", [CALL, BOOK], lambda: _ansible(tmp_path / "ansible"))
    ours = _pctfleet(tmp_path / "pctfleet", tmp_path / "runs")

    # A converged container: the one probe call, every copy read in it.
    assert ours.pop("calls") == 1
    assert ours["files"] == theirs["files"]
    assert ours["first"] == theirs["first"]
    assert ours["second"] == theirs["second"]
    # What the source's walk gives, spelt out (the comparison above holds it too).
    files = ours["files"]
    assert files["slash/dangling"] == ["l", "", "", "nowhere"]
    assert files["slash/link_out"][0::3] == ["f", "outside\n"]
    assert files["slash/dirlink_out/od.txt"][0::3] == ["f", "in a linked folder\n"]
    assert files["slash/empty"][:2] == ["d", "0755"]
    assert files["existing/keep"][3] == "not in the source\n"
    assert files["existing"][1] == "0700" and files["existing/sub"][1] == "0755"
    assert files["made"][1:3] == ["0750", "nobody:nogroup"]
    assert files["r_new"][1] == "0644" and files["r_diff"][1] == "0600"
