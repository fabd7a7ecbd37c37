"""Host patterns as ansible-core selects hosts, and as pctfleet selects containers, on
tests/patterns/hosts.ini: a play's `hosts:` (plain patterns, lists, templates) through
`ansible-playbook --list-hosts`, and --limit (limit files, subscripts past the end,
selections that leave nothing) through `ansible all --list-hosts`.

Where Ansible matches nothing it warns and goes on; pctfleet refuses a term that
names nothing: that error counts as "nothing" here (tests/unit/test_limit.py checks
the errors, and pctfleet's own exact terms Ansible has no name for). Hosts are
compared in order: a play's is its `ansible_play_hosts_all` (the order its `serial`
batches and `run_once` follow), a --limit's what `ansible --list-hosts` lists.
Ansible's answers are kept by their inputs (tests/integration/differ.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import differ

from pctfleet.errors import InputError, InventoryError
from pctfleet.inventory import load_inventory
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, play_patterns
from pctfleet.transport.options import ConnectOptions

CALL = 2  # bump when how Ansible is called here changes
INI = (Path(__file__).resolve().parents[1] / "patterns/hosts.ini").read_text()
PATTERNS = [
    "all", "*", "*1", "*.prod.example.com", "api.*", "a*", "al*", "?t*", "*example.com",
    "gpu", "gpu[0]", "gpu[-1]", "gpu[-5]", "gpu[1:]", "gpu[0:1]", "gpu[0:0]", "gpu[3:0]",
    "gpu[2:1]", "gpu[9:]", "gpu[1-2]", "top[3]", "top[0:3]", "web[0]", "web[-1]", "web[1:]",
    "*[0]", "*[1]", "all[1]", "rack*[1]", "ct0*[1]", "empty", "empty[0]", "ungrouped",
    "ungrouped[0]", "ct0[12]", "ct0[1-2]", "~ct0[12]", "~ct", "~t0", "~.*prod", "ct0[!2]",
    "ct03", "all:&ct03", "gpu:!ct03", "gpu:&rack", "gpu,!rack", "!gpu", "&gpu", "gpu ct02",
    "gpu:101", "192.0.2.*", "pve1.*", "web:!*.dev.*", "gpu:!gpu[0]",
    "gpu[0],gpu[-1]", ["gpu:!gpu-2", "ct02"], ["gpu", "!rack"], ["gpu-1", "rack:!gpu-1"],
]  # fmt: skip
# Rendered before the play has hosts: -e, play vars, vars_files, magic variables. (Not
# groups.top: past a group's children ansible-core's order is a set's, run to run.)
TEMPLATED = [
    ({"hosts": "{{ target }}"}),
    ({"hosts": "{{ from_vars }}", "vars": {"from_vars": "prod"}}),
    ({"hosts": "{{ from_file }}", "vars_files": ["names.yml"]}),
    ({"hosts": "{{ groups['gpu'][:2] }}"}),
    ({"hosts": "{{ groups.gpu | last }},{{ target }}"}),
    ({"hosts": ["{{ 'r' ~ 'ack' }}", "!{{ target_not }}"]}),
]
EXTRA = ["-e", "target=web", "-e", "target_not=ct12"]
LIMITS = [
    "@site.retry", "@site.retry,prod", "empty", "gpu:&rack:!ct02:!ct12", "gpu[9]", "gpu[9:]",
    "*1", "gpu[1:]", "~api",
]  # fmt: skip
RETRY = "gpu-1\n\n  rack  \n!ct12\n"
# Where the order alone differs from the inventory's: (inventory, a play's hosts).
_AB = "a proxmox_vmid=200 ansible_host=192.0.2.10\nb proxmox_vmid=201 ansible_host=192.0.2.10\n"
ORDERS = [
    (f"[pve1]\n{_AB}[canary]\nb\n", "canary:pve1"),  # the terms' order: b first
    (f"[pve1]\n{_AB}[canary]\nb\n", "pve1:canary"),
    (f"[pve1]\n{_AB}[canary]\nb\n", "canary:pve1:&pve1"),
    (f"[pve1]\n{_AB}[canary]\nb\n", "b:a"),
    # a group's own hosts before its children's
    ("[pve1]\na proxmox_vmid=200 ansible_host=192.0.2.10\n[gpu]\n"
     "b proxmox_vmid=201 ansible_host=192.0.2.10\n[gpu:children]\npve1\n", "gpu"),
    # all: its children in order, their own hosts first, then deeper
    ("[pve1]\na proxmox_vmid=200 ansible_host=192.0.2.10\n[pve2]\n"
     "b proxmox_vmid=201 ansible_host=192.0.2.10\n[gpu:children]\npve1\n", "all"),
]  # fmt: skip


def _book() -> list[dict]:
    plays = [{"hosts": pattern} for pattern in PATTERNS] + TEMPLATED
    return [
        {"name": f"p{i}", **play, "gather_facts": False, "tasks": [_PLAY_HOSTS]}
        for i, play in enumerate(plays)
    ]


_PLAY_HOSTS = {"debug": {"msg": "{{ ansible_play_hosts_all | join(',') }}"}, "run_once": True}


def _write(work: Path) -> None:
    (work / "hosts.ini").write_text(INI)
    (work / "site.yml").write_text(json.dumps(_book(), indent=1))
    (work / "names.yml").write_text("from_file: dev\n")
    (work / "site.retry").write_text(RETRY)


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    return env | {"HOME": str(work), "ANSIBLE_DEPRECATION_WARNINGS": "False"}


def _play_hosts(work: Path, inventory: str, book: str) -> dict[str, list[str]]:
    """Each play's `ansible_play_hosts_all`, in order (--list-hosts sorts them)."""
    venv = differ.ansible_env.ensure_venv()
    argv = [str(venv / "bin/ansible-playbook"), "-i", inventory, book, "-c", "local"]
    done = subprocess.run(
        [*argv, *EXTRA], capture_output=True, text=True, env=_env(work), cwd=work, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    plays: dict[str, list[str]] = {}
    current = None
    for line in done.stdout.splitlines():
        header = re.match(r"^PLAY \[(p\d+)\] ", line)
        listed = re.match(r'^    "msg": "(.*)"$', line)
        if header:
            current = plays.setdefault(header.group(1), [])
        elif listed and current == []:  # with `serial`, once a batch: the first is all
            current += listed.group(1).split(",")
    return plays


def _ansible(work: Path) -> dict:
    venv = differ.ansible_env.ensure_venv()
    plays = _play_hosts(work, "hosts.ini", "site.yml")
    limits = {}
    for limit in LIMITS:
        argv = [str(venv / "bin/ansible"), "all", "-i", "hosts.ini", "--list-hosts", "-l", limit]
        run = subprocess.run(argv, capture_output=True, text=True, env=_env(work), cwd=work)
        listed = [line.strip() for line in run.stdout.splitlines() if line.startswith("    ")]
        limits[limit] = {"rc": run.returncode, "hosts": listed}
    return {"plays": plays, "limits": limits}


def _pctfleet(work: Path) -> dict:
    inv = load_inventory(work / "hosts.ini")
    request = RunRequest(
        work / "site.yml",
        inv,
        inv.select(None),
        ConnectOptions(),
        RunOptions(extra_vars={"target": "web", "target_not": "ct12"}, base_dir=str(work)),
    )
    plays = {}
    for play in load_playbook(work / "site.yml", known_args()).plays:
        try:
            chosen = inv.matching(play_patterns(request, play))
        except InventoryError:
            chosen = []
        plays[play.name] = [c.host for c in chosen]
    limits = {}
    for limit in LIMITS:
        try:
            limits[limit] = {"rc": 0, "hosts": [c.host for c in inv.select(limit)]}
        except InputError:
            limits[limit] = {"rc": 1, "hosts": []}
    return {"plays": plays, "limits": limits}


def test_host_patterns_select_what_ansible_selects(tmp_path, monkeypatch):
    _write(tmp_path)
    monkeypatch.chdir(tmp_path)  # @site.retry is read from the current folder, as there
    inputs = [CALL, INI, PATTERNS, TEMPLATED, EXTRA, LIMITS, RETRY]
    theirs = differ.cached("limit-patterns", inputs, lambda: _ansible(tmp_path))
    ours = _pctfleet(tmp_path)
    assert len(theirs["plays"]) == len(PATTERNS) + len(TEMPLATED)  # Ansible listed them all
    assert theirs["limits"]["*1"] == {"rc": 0, "hosts": ["gpu-1"]}
    assert theirs["plays"]["p0"][:2] == ["solo", "ct02"]  # all: ungrouped, then ct03's
    named = {f"p{i}": pattern for i, pattern in enumerate(PATTERNS)}
    differs = {
        named.get(name, name): (theirs["plays"][name], ours["plays"][name])
        for name in theirs["plays"]
        if theirs["plays"][name] != ours["plays"][name]
    }
    assert differs == {}, "hosts: Ansible vs pctfleet"
    assert ours["limits"] == theirs["limits"]


def _ordered(work: Path) -> dict[str, list[str]]:
    for i, (ini, pattern) in enumerate(ORDERS):
        (work / f"o{i}.ini").write_text(ini)
        play = {"name": f"p{i}", "hosts": pattern, "serial": 1, "gather_facts": False}
        (work / f"o{i}.yml").write_text(json.dumps([{**play, "tasks": [_PLAY_HOSTS]}]))
    return {
        f"p{i}": _play_hosts(work, f"o{i}.ini", f"o{i}.yml")[f"p{i}"] for i in range(len(ORDERS))
    }


def test_a_play_s_hosts_come_in_ansible_s_order(tmp_path):
    theirs = differ.cached("play-order", [CALL, ORDERS], lambda: _ordered(tmp_path))
    assert theirs["p0"] == ["b", "a"]  # measured: the canary first
    ours = {}
    for i, (ini, pattern) in enumerate(ORDERS):
        (tmp_path / f"o{i}.ini").write_text(ini)
        ours[f"p{i}"] = [c.host for c in load_inventory(tmp_path / f"o{i}.ini").matching(pattern)]
    assert ours == theirs
