"""Inventories as ansible-inventory reads them, and as pctfleet reads them: an INI
file, a folder of YAML and INI files with its group_vars/host_vars, and
tests/varfiles (with the playbook folder's vars). For every host both tools must
give the same variables and the same groups.

Ansible's side is `ansible-inventory --list` (its merged hostvars, vars plugins
included); pctfleet's is `Inventory.vars_for`. The connection variables are left
out of the comparison: pctfleet consumes them into the node and the container
(tests/unit/test_varfiles.py checks where they lead). Ansible's answers are kept
by their inputs (tests/integration/differ.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import differ
import pytest

from pctfleet.inventory import load_inventory
from pctfleet.inventory.ansible import ANSIBLE_CONNECTION_VARS
from pctfleet.inventory.model import builtin_vars
from pctfleet.playbook import vault

CALL = 1  # bump when how Ansible is called here changes
TESTS = Path(__file__).resolve().parents[1]
INI = """\
h-first:2222 proxmox_vmid=198 ansible_host=127.0.0.8
; an INI inventory with what Ansible's docs show, and the quoting they warn about
h0 proxmox_vmid=199 ansible_host=127.0.0.9   # ungrouped
[ungrouped:vars]
u=1
[zz:vars]
zv=1
[aa]
gpu-b order=from-aa
[zz]
gpu-b order=from-zz
[gpu]
gpu-a proxmox_vmid=200 s="a b" qs='5' n=5 t=True f=false l="[1, 2]" d="{'k': 1}" e=
gpu-b proxmox_vmid=201 u=None

[gpu:vars]
ansible_host = 127.0.0.9
gv=FALSE
gi = 7
gs = 'quoted'
gl=[1, 'two']
sp = two words here

[fleet:children]
gpu
late

[late]
gpu-a late_var=yes

[all:vars]
av=1.5
ansible_user=root
"""
FOLDER = {
    "01-nodes.yml": """\
all:
  vars: {ansible_user: root, from_yaml: 1}
  children:
    gpu:
      vars: {ansible_host: 127.0.0.9, tier: yaml}
      hosts:
        gpu-a: {proxmox_vmid: 200}
        gpu-b: {proxmox_vmid: 201}
""",
    "02-more.ini": "[gpu:vars]\ntier=ini\n\n[canary]\ngpu-a note='first'\n\n[gpu]\ngpu-b extra=2\n"
    "\n[racks]\nrack-[08:10:2] ansible_host=127.0.0.9 rack=true\n",
    "sub/03.yaml": "all:\n  children:\n    deep:\n      hosts:\n        gpu-b: {deep: true}\n"
    "        db-[a:b]: {ansible_host: 127.0.0.9}\n",
    "README.md": "not an inventory\n",
    "notes.txt": "nor this\n",
    ".hidden": "[nor]\nthis\n",
    "group_vars/all.yml": "tier_file: all\n",
    "host_vars/gpu-a.yml": "from_host_vars: a\n",
    "host_vars/rack-08.yml": "proxmox_vmid: 208\n",
    "host_vars/rack-09.yml": "proxmox_vmid: 209\n",  # no such host: the step is 2
    "host_vars/rack-10.yml": "proxmox_vmid: 210\n",
    "host_vars/db-a.yml": "proxmox_vmid: 220\n",
    "host_vars/db-b": "proxmox_vmid: 221\n",
}
IGNORED = set(ANSIBLE_CONNECTION_VARS)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _ansible(source: Path, playbook_dir: Path | None, work: Path) -> dict:
    venv = differ.ansible_env.ensure_venv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env["HOME"] = str(work)
    argv = [str(venv / "bin/ansible-inventory"), "-i", str(source), "--list"]
    if playbook_dir is not None:
        argv += ["--playbook-dir", str(playbook_dir)]
        argv += ["--vault-password-file", str(work / "vault-pass")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "Unable to parse" not in done.stderr, done.stderr
    listed = json.loads(done.stdout)
    hostvars = listed.pop("_meta")["hostvars"]
    return {
        "vars": {h: _visible(v) for h, v in hostvars.items()},
        "groups": _closed(listed),
    }


def _closed(listed: dict) -> dict[str, list[str]]:
    """Each group's hosts, its children's included (ansible-inventory lists them apart)."""

    def hosts(name: str) -> set[str]:
        entry = listed.get(name, {})
        return set(entry.get("hosts", [])).union(*(hosts(c) for c in entry.get("children", [])))

    return {name: sorted(hosts(name)) for name in listed if name != "all" and hosts(name)}


def _visible(values: dict) -> dict:
    return {k: v for k, v in values.items() if k not in IGNORED}


def _pctfleet(source: Path, playbook_dir: Path | None) -> dict:
    inv = load_inventory(source, playbook_dir)
    own = set(builtin_vars(inv.containers[0]))
    variables = {
        c.host: {k: v for k, v in inv.vars_for(c).items() if k not in own} for c in inv.containers
    }
    # ansible-inventory --list leaves out a group with no hosts (ungrouped, when empty).
    groups = {
        name: sorted(inv.get(k).host for k in g.members)
        for name, g in inv.groups.items()
        if g.members
    }
    return json.loads(json.dumps({"vars": variables, "groups": groups}))


def _case(name: str, tmp_path: Path) -> tuple[Path, Path | None]:
    if name == "ini":
        _write(tmp_path, {"hosts.ini": INI})
        return tmp_path / "hosts.ini", None
    if name == "folder":
        _write(tmp_path / "inventory", FOLDER)
        return tmp_path / "inventory", None
    shutil.copytree(TESTS / "varfiles", tmp_path / "tree")
    (tmp_path / "tree/play/group_vars/gpu").mkdir()
    vaulted = TESTS / "unit/vault_fixtures/vars11.yml"
    shutil.copy(vaulted, tmp_path / "tree/play/group_vars/gpu/vault.yml")
    # Connection variables for ansible-inventory to read; neither tool connects.
    with (tmp_path / "tree/inv/group_vars/all.yml").open("a") as out:
        out.write("ansible_host: 127.0.0.9\n")
    return tmp_path / "tree/inv/hosts.yml", tmp_path / "tree/play"


def _inputs(root: Path) -> list:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "vault-pass")
    return [CALL, [[str(p.relative_to(root)), p.read_text()] for p in files]]


@pytest.mark.parametrize("name", ["ini", "folder", "varfiles"])
def test_every_host_gets_the_variables_and_groups_ansible_gives_it(name, tmp_path):
    source, playbook_dir = _case(name, tmp_path)
    (tmp_path / "vault-pass").write_text("hunter2\n")
    cached = differ.cache_path(f"inventory-{name}", _inputs(tmp_path))
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
    else:
        theirs = _ansible(source, playbook_dir, tmp_path)
        differ.keep(cached, theirs)
    vault.set_vault_secrets([vault.VaultSecret("default", b"hunter2")])
    try:
        ours = _pctfleet(source, playbook_dir)
    finally:
        vault.set_vault_secrets([])
    assert theirs["vars"] and theirs["groups"]  # Ansible did read the inventory
    assert ours == theirs
