"""The same playbooks through ansible-playbook and pctfleet: the same end state, the
same task statuses, on a first and a second run (see tests/compatibility.py).

Ansible runs every corpus playbook in one ansible-playbook call (a generated
playbook of import_playbook lines) on node1/200; pctfleet runs them one by one on
node2/200 at the same time. Any difference not listed as deliberate fails.
Ansible's outcome is cached by its inputs (ANSIBLE_CACHE below), so a rerun with
the same corpus runs pctfleet's side only.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import differ
import pytest
import yaml

from pctfleet.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
import compatibility as compat  # noqa: E402

from bench import ansible_env  # noqa: E402

pytestmark = pytest.mark.lab

ANSIBLE_AT = ("node1", 200)
PCTFLEET_AT = ("node2", 200)
HOST = "diff-ansible"
# Ansible's side is slow (five pct calls a task, no pipelining in proxmox_pct_remote) and
# a pure function of its inputs: its outcome is kept here, keyed by everything it reads
# (the corpus, -e, Ansible's versions, the container's system, this file). Set
# PCTFLEET_DIFF_FRESH=1 to run Ansible again anyway.
ANSIBLE_CACHE = Path("/var/cache/pctfleet/differential")
ANSIBLE_CALL = 1


def _inventory(lab: Lab, at: tuple[str, int], host: str) -> str:
    info = lab.info
    node = info.node(at[0])
    data = {
        "all": {
            "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(info.identity)},
            "children": {
                at[0]: {
                    "vars": {"ansible_host": node.address},
                    "hosts": {host: {"proxmox_vmid": at[1]}},
                }
            },
        }
    }
    return yaml.safe_dump(data)


def _in_container(lab: Lab, at: tuple[str, int], script: str) -> str:
    return differ.in_container(lab, at[0], at[1], script)


def _ansible(lab: Lab, work: Path, cases: list, extra: dict) -> dict:
    """One ansible-playbook run of every case: its ansible.posix.json report."""
    book = work / "all.yml"
    book.write_text(yaml.safe_dump([{"import_playbook": str(c.path)} for c in cases]))
    env = ansible_env.environment(work, lab.info.known_hosts)
    env |= {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_GATHERING": "explicit"}
    argv = [str(ansible_env.VENV / "bin/ansible-playbook"), "-i", str(work / "ansible.yml")]
    argv += [str(book), "-e", json.dumps(extra)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    # The report is the output's last JSON document; `pause` prints its banner before it.
    start = done.stdout.find("\n{\n") + 1 if not done.stdout.startswith("{") else 0
    assert done.stdout.strip(), f"ansible-playbook said nothing: {done.stderr[-2000:]}"
    return json.loads(done.stdout[start:])


def _pctfleet(lab: Lab, work: Path, cases: list, extra: dict) -> dict:
    recaps, stats = {}, []
    for case in cases:
        argv = [sys.executable, "-m", "pctfleet", "run", str(case.path), "--json"]
        argv += ["-i", str(work / "pctfleet.yml"), "--known-hosts", str(lab.info.known_hosts)]
        argv += ["-e", json.dumps(extra), "--journal-dir", str(work / "runs")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.stdout.strip(), f"{case.name}: pctfleet said nothing: {done.stderr}"
        report = json.loads(done.stdout)
        recaps[case.name] = compat.pctfleet_recap(report)
        stats.append(compat.pctfleet_stats(report))
    return recaps, stats


def _both(lab: Lab, work: Path, cases: list, extra: dict) -> tuple[tuple, tuple]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        ansible = pool.submit(_ansible, lab, work, cases, extra)
        ours = pool.submit(_pctfleet, lab, work, cases, extra)
        return ansible.result(), ours.result()


def _ansible_key(lab: Lab, cases: list, extra: dict) -> str:
    """What Ansible's outcome depends on, hashed: the corpus (with its roles, templates,
    vars), how the container is reset and read, -e, Ansible's versions, the container's
    system, and how Ansible is called (ANSIBLE_CALL: bump it when _ansible changes)."""
    digest = hashlib.sha256()
    folder = compat.CORPUS
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    system = _in_container(lab, ANSIBLE_AT, "cat /etc/os-release; python3 -V; uname -m")
    inputs = [ANSIBLE_CALL, compat.reset_script(cases), compat.SNAPSHOT, extra, system]
    digest.update(json.dumps([*inputs, _versions()], sort_keys=True).encode())
    return digest.hexdigest()[:24]


def _snapshot(lab: Lab, at: tuple[str, int]) -> dict:
    return compat.parse_snapshot(_in_container(lab, at, compat.SNAPSHOT))


def _ansible_outcome(lab: Lab, work: Path, cases: list, extra: dict) -> tuple[dict, dict]:
    """Ansible's recaps and stats of both runs and its end state after the first, from
    the cache; or both tools run now, side by side (then pctfleet's outcome too)."""
    cached = ANSIBLE_CACHE / f"{_ansible_key(lab, cases, extra)}.json"
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        return json.loads(cached.read_text()), {}
    outcome: dict = {}
    ours: dict = {}
    for run in ("first", "second"):
        outcome[run], ours[run] = _both(lab, work, cases, extra)
        if run == "first":
            outcome["state"] = _in_container(lab, ANSIBLE_AT, compat.SNAPSHOT)
            ours["state"] = _snapshot(lab, PCTFLEET_AT)
    outcome["ran_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ANSIBLE_CACHE.mkdir(parents=True, exist_ok=True)
    cached.with_suffix(".tmp").write_text(json.dumps(outcome))
    cached.with_suffix(".tmp").replace(cached)  # never a half-written outcome
    return outcome, ours


def test_playbooks_leave_what_ansible_leaves(lab: Lab, tmp_path: Path):
    started = time.monotonic()
    ansible_env.ensure_venv()
    ansible_env.write_lab_plugin()
    cases = compat.corpus()
    extra = compat.extra_vars(cases)
    (tmp_path / "ansible.yml").write_text(_inventory(lab, ANSIBLE_AT, HOST))
    (tmp_path / "pctfleet.yml").write_text(_inventory(lab, PCTFLEET_AT, "diff-pctfleet"))
    for at in (ANSIBLE_AT, PCTFLEET_AT):
        _in_container(lab, at, compat.reset_script(cases))
    records = {c.name: compat.Record(c.name, c.title, c.tasks) for c in cases}
    totals: dict[str, list] = {}
    theirs, ran = _ansible_outcome(lab, tmp_path, cases, extra)
    for run in ("first", "second"):
        ansible = compat.ansible_recaps(theirs[run], cases, HOST)
        their_stats = compat.ansible_stats(theirs[run], HOST)
        ours, our_stats = ran[run] if ran else _pctfleet(lab, tmp_path, cases, extra)
        for case in cases:
            diffs = compat.compare_recap(ansible.get(case.name, []), ours.get(case.name, []))
            records[case.name].add(run, diffs)
        deliberate = [d for r in records.values() for d in r.aspects[run] if "deliberate" in d]
        totals[run] = compat.compare_totals(their_stats, our_stats, deliberate)
        if run == "first":
            mine = ran["state"] if ran else _snapshot(lab, PCTFLEET_AT)
            for case in cases:
                state = compat.parse_snapshot(theirs["state"]).get(case.name, {})
                diffs = compat.compare_state(state, mine.get(case.name, {}))
                records[case.name].add("state", diffs)
    seconds = time.monotonic() - started
    meta = {"ansible": _versions(), "ansible_ran_at": theirs["ran_at"], "seconds": seconds}
    meta["totals"] = totals
    saved = compat.save(list(records.values()), meta)
    problems = [line for r in records.values() for line in r.unexplained()]
    problems += [f"[{run}] {d}" for run, diffs in totals.items() for d in diffs]
    assert not problems, f"{len(problems)} differences (records: {saved}):\n" + "\n".join(problems)


def _versions() -> str:
    found = ansible_env.versions()
    return f"ansible-core {found['ansible-core']}, community.proxmox {found['community.proxmox']}"
