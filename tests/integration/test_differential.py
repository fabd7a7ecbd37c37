"""The same playbooks through ansible-playbook and pctfleet: the same end state, the
same task statuses, on a first and a second run (see tests/compatibility.py).

Ansible runs every corpus playbook in one ansible-playbook call (a generated
playbook of import_playbook lines) on node1/200; pctfleet runs them one by one on
node2/200 at the same time. Any difference not listed as deliberate fails.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
    # ssh joins its arguments into one line for the node's shell: quote the script.
    remote = shlex.join(["pct", "exec", str(at[1]), "--", "sh", "-c", script])
    argv = [*lab.ssh_args(at[0]), remote]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{at}: {done.stderr}"
    return done.stdout


def _ansible(lab: Lab, work: Path, cases: list, extra: dict) -> dict:
    book = work / "all.yml"
    book.write_text(yaml.safe_dump([{"import_playbook": str(c.path)} for c in cases]))
    env = ansible_env.environment(work, lab.info.known_hosts)
    env |= {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_GATHERING": "explicit"}
    argv = [str(ansible_env.VENV / "bin/ansible-playbook"), "-i", str(work / "ansible.yml")]
    argv += [str(book), "-e", json.dumps(extra)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip(), f"ansible-playbook said nothing: {done.stderr[-2000:]}"
    report = json.loads(done.stdout)
    return compat.ansible_recaps(report, cases, HOST), report["stats"].get(HOST, {})


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


def _snapshots(lab: Lab) -> tuple[dict, dict]:
    return (
        compat.parse_snapshot(_in_container(lab, ANSIBLE_AT, compat.SNAPSHOT)),
        compat.parse_snapshot(_in_container(lab, PCTFLEET_AT, compat.SNAPSHOT)),
    )


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
    for run in ("first", "second"):
        (ansible, their_stats), (ours, our_stats) = _both(lab, tmp_path, cases, extra)
        for case in cases:
            diffs = compat.compare_recap(ansible.get(case.name, []), ours.get(case.name, []))
            records[case.name].add(run, diffs)
        deliberate = [d for r in records.values() for d in r.aspects[run] if "deliberate" in d]
        totals[run] = compat.compare_totals(their_stats, our_stats, deliberate)
        if run == "first":
            theirs, mine = _snapshots(lab)
            for case in cases:
                diffs = compat.compare_state(theirs.get(case.name, {}), mine.get(case.name, {}))
                records[case.name].add("state", diffs)
    seconds = time.monotonic() - started
    meta = {"ansible": _versions(), "seconds": seconds, "totals": totals}
    saved = compat.save(list(records.values()), meta)
    problems = [line for r in records.values() for line in r.unexplained()]
    problems += [f"[{run}] {d}" for run, diffs in totals.items() for d in diffs]
    assert not problems, f"{len(problems)} differences (records: {saved}):\n" + "\n".join(problems)


def _versions() -> str:
    found = ansible_env.versions()
    return f"ansible-core {found['ansible-core']}, community.proxmox {found['community.proxmox']}"
