"""Jinja tests in `when:` through ansible-playbook and pctfleet, both on this machine
(`-c local` and `--local`: what a test answers does not depend on the connection):
for each condition, both tools run the task or both skip it.

The conditions cover ansible-core's own tests (truthy, falsy, contains, set relations,
the result tests' other names, the path tests, nan) next to Jinja's. Ansible's
statuses are kept by their inputs (tests/integration/differ.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import differ
import pytest

CALL = 1  # bump when how Ansible is called here changes
CONDITIONS = [
    "1 is truthy",
    "'' is truthy",
    "'no' is truthy",
    "'no' is truthy(convert_bool=True)",
    "'YES ' is truthy(convert_bool=True)",
    "0 is falsy",
    "'off' is falsy(convert_bool=True)",
    "'maybe' is falsy(convert_bool=True)",
    "[1, 2] is contains(2)",
    "'abc' is contains('b')",
    "[0, 1] is any",
    "[0, 1] is all",
    "[1] is subset([1, 2])",
    "[1, 2] is superset([1])",
    "[3] is issubset([1, 2])",
    "[1, 2] is issuperset([2, 3])",
    "r is unreachable",
    "r is reachable",
    "r is change",
    "r is failure",
    "r is successful",
    "r is skip",
    "r is changed",
    "r.rc is number",
    "r.stdout is string",
    "r.missing is undefined",
    "'/etc' is directory",
    "'/etc' is is_dir",
    "'/etc/hostname' is file",
    "'/nonexistent' is exists",
    "'/etc' is abs",
    "'etc' is is_abs",
    "'/' is mount",
    "('nan' | float) is nan",
    "1.5 is isnan",
    "'/etc' is same_file('/etc/../etc')",
    "none is none",
    "{} is mapping",
    "'1.2.3' is version('1.2', '>')",
    "{'a': nothing} is mapping",
    "[1, nothing] is sequence",
    "{'a': nothing} is contains('a')",
]


def _playbook(path: Path) -> Path:
    tasks = ['    - name: register\n      command: "true"\n      register: r\n']
    for condition in CONDITIONS:
        tasks.append(f"    - name: {json.dumps(condition)}\n      debug: {{msg: ran}}\n")
        tasks.append(f"      when: {json.dumps(condition)}\n")
    path.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n" + "".join(tasks))
    return path


def _ansible(book: Path, work: Path) -> dict[str, str]:
    tasks = differ.ansible_local(book, work)
    return {t["task"]["name"]: differ.ansible_status(t["hosts"]["localhost"]) for t in tasks}


def _pctfleet(book: Path) -> dict[str, str]:
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["containers"]
    return {t["name"]: t["status"] for t in run["tasks"]}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> tuple[dict, dict]:
    work = tmp_path_factory.mktemp("jinja-tests")
    book = _playbook(work / "tests.yml")
    cached = differ.cache_path("jinja-tests", [CALL, book.read_text()])
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
    else:
        theirs = _ansible(book, work)
        differ.keep(cached, theirs)
    return theirs, _pctfleet(book)


def test_every_condition_runs_or_skips_its_task_as_in_ansible(outcomes):
    theirs, ours = outcomes
    assert sorted(set(theirs.values())) == ["changed", "ok", "skipped"]  # both kinds seen
    assert ours == theirs
