"""Two containers, one of them slow, through ansible-playbook and pctfleet: where a
failure or `meta: end_play` in one stops the other, the other stops where Ansible's does.

Ansible's linear strategy runs each task on every host before any host starts the
next, then applies `any_errors_fatal`, `max_fail_percentage` and `end_play`. Here the
"slow" container takes 2 s over a task the "fast" one skips, then fails (or ends the
play); a fast container running ahead would already have written `after`.

Ansible runs on node1/200 (slow) and node1/201 (fast), pctfleet on node2's at the
same time; per container, the task statuses, the files left and the exit code must
be the same. Ansible's outcome is kept by its inputs (its cache below).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import differ
import pytest
import yaml

from pctfleet.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import ansible_env  # noqa: E402

pytestmark = pytest.mark.lab

DIR = "/tmp/pctfleet-lockstep"
HOSTS = {"slow": 200, "fast": 201}
CALL = 1  # bump when how Ansible is called here changes

NEXT_PLAY = f"""
- name: next play
  hosts: all
  gather_facts: false
  tasks:
    - name: next play ran
      copy: {{dest: {DIR}/next, content: "next\\n"}}
"""
SLOW_FAILS = """
    - name: slow one fails late
      shell: sleep 2; exit 3
      when: part == "slow"
"""
AFTER = f"""
    - name: after
      copy: {{dest: {DIR}/after, content: "after\\n"}}
"""


def _play(keys: str, body: str) -> str:
    head = "- name: first play\n  hosts: all\n  gather_facts: false\n"
    return head + textwrap.indent(keys, "  ") + "  tasks:" + body + AFTER + NEXT_PLAY


CASES = {
    "any_errors_fatal": _play("any_errors_fatal: true\n", SLOW_FAILS),
    "max_fail_percentage": _play("max_fail_percentage: 49\n", SLOW_FAILS),
    "task_fatal": _play("", SLOW_FAILS + "      any_errors_fatal: true\n"),
    "rescued": _play(
        "any_errors_fatal: true\n",
        textwrap.indent(
            "\n- name: guarded\n  block:"
            + textwrap.indent(SLOW_FAILS, "  ")
            + "  rescue:\n    - name: rescue\n      debug: {msg: rescued}\n",
            "    ",
        ),
    ),
    "end_play": _play(
        "",
        """
    - name: slow one works
      command: sleep 2
      when: part == "slow"
    - name: slow one ends the play
      meta: end_play
      when: part == "slow"
""",
    ),
    "always": _play(
        "any_errors_fatal: true\n",
        textwrap.indent(
            "\n- name: guarded\n  block:"
            + textwrap.indent(SLOW_FAILS, "  ")
            + "  always:\n    - name: always\n      debug: {msg: always}\n",
            "    ",
        ),
    ),
    "no_keyword": _play("", SLOW_FAILS),  # each host on its own, in both tools
}
# Measured differences, kept on purpose (docs/playbooks.md, "Flow keywords"): the
# one difference each case shows, as (where, Ansible's, pctfleet's). Anything else
# that differs fails, and so does either tool changing here.
KNOWN = {
    # Every host of the batch runs the rescue, in both tools; Ansible then leaves the
    # hosts that failed only with the batch out of the next play, and exits 2: a bug
    # it has not fixed (ansible/ansible#84117), not copied here.
    "rescued": {
        ("exit",): (2, 0),
        ("tasks", "fast"): (
            [["slow one fails late", "skipped"], ["rescue", "ok"], ["after", "changed"]],
            [["slow one fails late", "skipped"], ["rescue", "ok"], ["after", "changed"]]
            + [["next play ran", "changed"]],
        ),
        ("files", "fast"): (["after"], ["after", "next"]),
    },
}


def _inventory(lab: Lab, node: str) -> str:
    info = lab.info
    hosts = {name: {"proxmox_vmid": ctid, "part": name} for name, ctid in HOSTS.items()}
    data = {
        "all": {
            "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(info.identity)},
            "children": {node: {"vars": {"ansible_host": info.node(node).address}, "hosts": hosts}},
        }
    }
    return yaml.safe_dump(data)


def _reset(lab: Lab, node: str) -> None:
    for ctid in HOSTS.values():
        differ.in_container(lab, node, ctid, f"rm -rf {DIR} && mkdir -p {DIR}")


def _files(lab: Lab, node: str) -> dict[str, list[str]]:
    script = f"find {DIR} -type f | sort"
    found = {name: differ.in_container(lab, node, c, script).split() for name, c in HOSTS.items()}
    return {name: [Path(f).name for f in files] for name, files in found.items()}


def _ansible(lab: Lab, work: Path, book: Path) -> dict:
    done = differ.run_ansible(lab, work, work / "ansible.yml", book)
    return {"exit": done["exit"], "tasks": {name: [] for name in HOSTS} | done["tasks"]}


def _pctfleet(lab: Lab, work: Path, book: Path) -> dict:
    return differ.run_pctfleet(lab, work, work / "pctfleet.yml", book)


def _outcomes(lab: Lab, work: Path, name: str, text: str) -> tuple[dict, dict]:
    """Ansible's outcome (cached, or run now) and pctfleet's, each with its files."""
    book = work / f"{name}.yml"
    book.write_text(text)
    cached = differ.cache_path(f"lockstep-{name}", [CALL, text, DIR, HOSTS])
    for node in ("node1", "node2"):
        _reset(lab, node)
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
        ours = _pctfleet(lab, work, book)
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            ansible = pool.submit(_ansible, lab, work, book)
            mine = pool.submit(_pctfleet, lab, work, book)
            theirs, ours = ansible.result(), mine.result()
        theirs["files"] = _files(lab, "node1")
        differ.keep(cached, theirs)
    ours["files"] = _files(lab, "node2")
    return theirs, ours


@pytest.fixture(scope="module")
def work(lab, tmp_path_factory) -> Path:
    lab.up(nodes=2, containers=2)
    ansible_env.ensure_venv()
    ansible_env.write_lab_plugin()
    folder = tmp_path_factory.mktemp("lockstep")
    (folder / "ansible.yml").write_text(_inventory(lab, "node1"))
    (folder / "pctfleet.yml").write_text(_inventory(lab, "node2"))
    yield folder
    for node in ("node1", "node2"):
        for ctid in HOSTS.values():
            differ.in_container(lab, node, ctid, f"rm -rf {DIR}")


def _at(outcome: dict, where: tuple) -> object:
    for step in where:
        outcome = outcome[step]
    return outcome


@pytest.mark.parametrize("name", list(CASES))
def test_a_batch_stops_where_ansibles_stops(lab, work, name):
    theirs, ours = _outcomes(lab, work, name, CASES[name])
    for where, (ansible, pctfleet) in KNOWN.get(name, {}).items():
        assert (_at(theirs, where), _at(ours, where)) == (ansible, pctfleet), where
        _at(theirs, where[:-1])[where[-1]] = _at(ours, where[:-1])[where[-1]] = "known"
    assert ours == theirs
