"""The newest Ansible semantics on ground pctfleet did not make: Debian 12 and 13
containers with systemd as PID 1, their files laid out by hand (modes, owners, a tree,
a hard link target), run by ansible-playbook through proxmox_pct_remote and by
pctfleet through `pct exec`, one after the other on the same container, each from the
same hand-made start and twice. Per task the status and the debug lines, and after
the first run the files (type, mode, owner, group, links, size, content, mtime), must
be the same.

It covers symbolic modes, `validate`, `file` with `recurse`/`state: hard`/a fixed
`modification_time`, what `command` registers (`cmd`, a program that cannot start),
`include_vars` of a folder, `copy` of a folder and of a file or folder already in the
container (`remote_src`, read with the container's python3), and a templated `notify`.
Ansible's outcome is kept by its inputs (differ.cached), so only pctfleet's side runs
again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import differ
import pytest
import yaml

from pctfleet.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import ansible_env  # noqa: E402

pytestmark = pytest.mark.lab

CALL = 1  # bump when how either tool is called here changes
DIR = "/srv/userworld"
# The hand-made start: what an operator's container already holds.
GROUND = f"""
set -e
rm -rf {DIR}; mkdir -p {DIR}/tree/sub {DIR}/keep
printf 'x\\n' > {DIR}/e644; chmod 644 {DIR}/e644
printf 'x\\n' > {DIR}/e600; chmod 600 {DIR}/e600
printf 'a\\n' > {DIR}/tree/a; chmod 600 {DIR}/tree/a
printf 'b\\n' > {DIR}/tree/sub/b; chmod 755 {DIR}/tree/sub/b
chmod 700 {DIR}/tree/sub
ln -s a {DIR}/tree/link-a
printf 'source\\n' > {DIR}/source
printf 'port = 80\\n' > {DIR}/keep/app.conf
"""
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {d: DIR, svc: app}
  tasks:
    - name: symbolic on a new file
      copy: {content: "n\n", dest: "{{ d }}/new", mode: "u=rw,g=r,o="}
    - name: symbolic on an existing file
      file: {path: "{{ d }}/e644", mode: "g+w,o-r"}
    - name: symbolic X
      file: {path: "{{ d }}/e600", mode: "a+X"}
    - name: validated
      copy: {content: "port = 81\n", dest: "{{ d }}/keep/app.conf", validate: "grep -q port %s"}
      notify: "restart {{ svc }}"
    - name: refused by validate
      copy: {content: "nonsense\n", dest: "{{ d }}/keep/app.conf", validate: "grep -q port %s"}
      ignore_errors: true
    - name: recurse
      file:
        path: "{{ d }}/tree"
        state: directory
        recurse: true
        owner: nobody
        mode: "u=rwX,g=rX,o="
    - name: hard link
      file: {src: "{{ d }}/source", dest: "{{ d }}/hard", state: hard}
    - name: a fixed time
      file: {path: "{{ d }}/source", modification_time: "202401020304.05", access_time: preserve}
    - name: a program that is not there
      command: /nonexistent/nvidia-smi -L
      register: missing
      ignore_errors: true
    - name: a program that runs
      command: printf '%s' $HOME
      register: ran
    - name: what they registered
      debug:
        msg: >-
          {{ missing.rc }} {{ missing.msg }} {{ missing.changed }} {{ ran.cmd }}
          {{ ran.start is string }}
    - name: a folder from the controller
      copy: {src: conf/, dest: "{{ d }}/conf", directory_mode: "0750", mode: "0640"}
    - name: a file already in the container
      copy: {src: "{{ d }}/keep/app.conf", dest: "{{ d }}/copied.conf", remote_src: true}
    - name: a folder already in the container
      copy: {src: "{{ d }}/tree/", dest: "{{ d }}/tree-copy", remote_src: true}
    - name: a vars folder
      include_vars: {dir: vars.d, name: conf}
    - name: what it read
      debug: {msg: "{{ conf | to_json(sort_keys=True) }}"}
  handlers:
    - name: restart app
      copy: {content: "restarted\n", dest: "{{ d }}/restarted"}
""".replace("DIR", DIR, 1)
VARS = {"vars.d/a.yml": "a: 1\nshared: from-a\n", "vars.d/b.yml": "b: 2\nshared: from-b\n"}
VARS |= {"conf/a.txt": "a\n", "conf/sub/b.txt": "b\n", "conf/empty/.keep": ""}
SNAPSHOT = (
    f"cd {DIR} && find . -mindepth 1 | sort | while read -r p; do "
    'printf "%s %s\\n" "$p" "$(stat -c "%F %a %U %G %h %s" "$p")"; '
    '[ -f "$p" ] && [ ! -L "$p" ] && sha1sum < "$p"; '
    '[ "$p" = ./source ] && stat -c "%Y" "$p"; done; true'
)
# Debian 12 (Python 3.11) and 13 (Python 3.13), both with systemd as PID 1.
SUITES = ("bookworm", "trixie")


def _inventory(lab: Lab, at: tuple[str, int]) -> dict:
    info = lab.info
    host = {"proxmox_vmid": at[1]}
    node = {"vars": {"ansible_host": info.node(at[0]).address}, "hosts": {"userworld": host}}
    keys = {"ansible_user": "root", "ansible_ssh_private_key_file": str(info.identity)}
    return {"all": {"vars": keys, "children": {at[0]: node}}}


def _folder(folder: Path, inventory: dict) -> None:
    files = {"book.yml": BOOK, "inventory.yml": yaml.safe_dump(inventory), **VARS}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _ansible_run(lab: Lab, work: Path) -> list:
    env = ansible_env.environment(work, lab.info.known_hosts)
    env |= {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_GATHERING": "explicit"}
    argv = [str(ansible_env.VENV / "bin/ansible-playbook"), "-i", str(work / "inventory.yml")]
    done = subprocess.run(
        [*argv, str(work / "book.yml")], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.stdout.strip(), f"ansible-playbook said nothing: {done.stderr[-2000:]}"
    rows = []
    for play in json.loads(done.stdout)["plays"]:
        for task in play["tasks"]:
            result = task["hosts"]["userworld"]
            name = task["task"]["name"]
            shown = str(result.get("msg", "")) if name.startswith("what") else ""
            rows.append([name, differ.ansible_status(result), shown])
    return rows


def _pctfleet_run(lab: Lab, work: Path) -> list:
    argv = [sys.executable, "-m", "pctfleet", "run", str(work / "book.yml"), "--json"]
    argv += ["-i", str(work / "inventory.yml"), "--known-hosts", str(lab.info.known_hosts)]
    done = subprocess.run(
        [*argv, "--journal-dir", str(work / "runs")], capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip(), done.stderr
    (run,) = json.loads(done.stdout)["containers"]
    rows = []
    for task in run["tasks"]:
        name = task["name"].removeprefix("handler ")
        shown = str(task["msg"]) if name.startswith("what") else ""
        rows.append([name, task["status"], shown])
    return rows


def _both_runs(lab: Lab, at: tuple[str, int], work: Path, run) -> dict:  # noqa: ANN001
    differ.in_container(lab, *at, GROUND)
    first = run(lab, work)
    state = differ.in_container(lab, *at, SNAPSHOT)
    return {"first": first, "second": run(lab, work), "state": state}


@pytest.mark.parametrize("suite", SUITES)
def test_new_semantics_on_a_hand_made_systemd_container(lab, extra_ct, tmp_path, suite):
    at = extra_ct(suite, "systemd")
    system = differ.in_container(lab, *at, "cat /etc/os-release; python3 -V; ps -p 1 -o comm=")
    assert suite in system and "systemd" in system
    for side in ("ansible", "pctfleet"):
        _folder(tmp_path / side, _inventory(lab, at))
    inputs = [CALL, GROUND, BOOK, VARS, SNAPSHOT, system]
    theirs = differ.cached(
        "userworld-lab", inputs, lambda: _both_runs(lab, at, tmp_path / "ansible", _ansible_run)
    )
    ours = _both_runs(lab, at, tmp_path / "pctfleet", _pctfleet_run)
    assert ours["first"] == theirs["first"]
    assert ours["second"] == theirs["second"]
    assert ours["state"] == theirs["state"]
    shown = {row[0]: row[2] for row in ours["first"]}
    assert shown["what they registered"].startswith("2 Error executing command. False")
