"""Inventories as ansible-inventory reads them, and as pctfleet reads them: an INI
file, a folder of YAML and INI files with its group_vars/host_vars, several -i
sources in two folders (each with its group_vars), a folder whose INI files name
groups of earlier files, and tests/varfiles (with the playbook folder's vars). For
every host both tools must give the same variables and the same groups; where
Ansible cannot parse a source (a group only a later source declares) pctfleet
refuses it.

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

from pctfleet.errors import InventoryError
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
# Three -i in two folders, X's twice: each source's folder gives group_vars, the
# later source winning (X's, read again last, over Y's); an INI source names groups
# (gpu, db) that earlier sources declared.
SEVERAL = {
    "X/hosts.ini": "[gpu]\ngpu-a proxmox_vmid=200 ansible_host=127.0.0.9\n[gpu:vars]\nfrom_src=x\n",
    "Y/hosts.yml": """\
all:
  children:
    gpu:
      vars: {from_src: y}
      hosts:
        gpu-a: {hv: y}
        gpu-b: {proxmox_vmid: 201, ansible_host: 127.0.0.9}
    deep:
      children: {gpu: {}}
    db:
      hosts:
        db-a: {proxmox_vmid: 202, ansible_host: 127.0.0.9}
""",
    "X/late.ini": "[gpu:vars]\nlate=1\n[fleet:children]\ngpu\ndb\n[db]\ngpu-b\n",
    "X/group_vars/all.yml": "v_all: x\nv_x: x\n",
    "X/group_vars/gpu.yml": "v_g: x\n",
    "Y/group_vars/all.yml": "v_all: y\nv_y: y\n",
    "Y/group_vars/deep.yml": "v_g: deep-y\nv_deep: y\n",
}
SEVERAL_ORDER = ["X/hosts.ini", "Y/hosts.yml", "X/late.ini"]
# One folder whose later INI files give vars and parents to a group of an earlier one.
NAMED_EARLIER = {
    "10-hosts.ini": "[gpu]\nct1 proxmox_vmid=200 ansible_host=127.0.0.9\n",
    "15-more.yml": "all:\n  children:\n    db:\n      hosts:\n"
    "        ct2: {proxmox_vmid: 201, ansible_host: 127.0.0.9}\n",
    "20-vars.ini": "[gpu:vars]\nx=1\n[db:vars]\ny=2\n",
    "30-groups.ini": "[fleet:children]\ngpu\ndb\n",
}
IGNORED = set(ANSIBLE_CONNECTION_VARS)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _ansible_inventory(sources: list[Path], playbook_dir: Path | None, work: Path):
    venv = differ.ansible_env.ensure_venv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env["HOME"] = str(work)
    argv = [str(venv / "bin/ansible-inventory"), "--list"]
    for source in sources:
        argv += ["-i", str(source)]
    if playbook_dir is not None:
        argv += ["--playbook-dir", str(playbook_dir)]
        argv += ["--vault-password-file", str(work / "vault-pass")]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)


def _ansible(sources: list[Path], playbook_dir: Path | None, work: Path) -> dict:
    done = _ansible_inventory(sources, playbook_dir, work)
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


def _pctfleet(sources: list[Path], playbook_dir: Path | None) -> dict:
    inv = load_inventory(sources, playbook_dir)
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


def _case(name: str, tmp_path: Path) -> tuple[list[Path], Path | None]:
    if name == "ini":
        _write(tmp_path, {"hosts.ini": INI})
        return [tmp_path / "hosts.ini"], None
    if name == "folder":
        _write(tmp_path / "inventory", FOLDER)
        return [tmp_path / "inventory"], None
    if name == "several":
        _write(tmp_path, SEVERAL)
        return [tmp_path / name for name in SEVERAL_ORDER], None
    if name == "named-earlier":
        _write(tmp_path / "inventory", NAMED_EARLIER)
        return [tmp_path / "inventory"], None
    shutil.copytree(TESTS / "varfiles", tmp_path / "tree")
    (tmp_path / "tree/play/group_vars/gpu").mkdir()
    vaulted = TESTS / "unit/vault_fixtures/vars11.yml"
    shutil.copy(vaulted, tmp_path / "tree/play/group_vars/gpu/vault.yml")
    # Connection variables for ansible-inventory to read; neither tool connects.
    with (tmp_path / "tree/inv/group_vars/all.yml").open("a") as out:
        out.write("ansible_host: 127.0.0.9\n")
    return [tmp_path / "tree/inv/hosts.yml"], tmp_path / "tree/play"


def _inputs(root: Path, sources: list[Path]) -> list:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "vault-pass")
    inputs = [CALL, [[str(p.relative_to(root)), p.read_text()] for p in files]]
    # The order of several sources changes the outcome; one source keeps its old key.
    return [*inputs, [str(p.relative_to(root)) for p in sources]] if len(sources) > 1 else inputs


@pytest.mark.parametrize("name", ["ini", "folder", "several", "named-earlier", "varfiles"])
def test_every_host_gets_the_variables_and_groups_ansible_gives_it(name, tmp_path):
    sources, playbook_dir = _case(name, tmp_path)
    (tmp_path / "vault-pass").write_text("hunter2\n")
    cached = differ.cache_path(f"inventory-{name}", _inputs(tmp_path, sources))
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
    else:
        theirs = _ansible(sources, playbook_dir, tmp_path)
        differ.keep(cached, theirs)
    vault.set_vault_secrets([vault.VaultSecret("default", b"hunter2")])
    try:
        ours = _pctfleet(sources, playbook_dir)
    finally:
        vault.set_vault_secrets([])
    assert theirs["vars"] and theirs["groups"]  # Ansible did read the inventory
    assert ours == theirs


# A group named before any source declares it: ansible-core fails to parse that file,
# warns, and reads on without it (what it had set before failing stays); pctfleet
# refuses the inventory, naming the file and line.
UNDECLARED = {
    "declared-later": (
        {"10-vars.ini": "[gpu:vars]\nx=1\n", "20-hosts.ini": "[gpu]\nct1 proxmox_vmid=200\n"},
        "10-vars.ini:1: section [gpu:vars] names group 'gpu', declared only by",
    ),
    "child-declared-later": (
        {
            "10-groups.ini": "[fleet:children]\ngpu\n",
            "20-hosts.ini": "[gpu]\nct1 proxmox_vmid=200\n",
        },
        "10-groups.ini:2: section [fleet:children] names group 'gpu', declared only by",
    ),
    "declared-nowhere": (
        {"10-hosts.ini": "[gpu]\nct1 proxmox_vmid=200\n", "20-vars.ini": "[nope:vars]\nx=1\n"},
        "20-vars.ini:1: section [nope:vars] is for a group declared nowhere",
    ),
}


@pytest.mark.parametrize("name", list(UNDECLARED))
def test_a_group_no_earlier_source_declares_is_refused_where_ansible_skips_the_file(name, tmp_path):
    files, message = UNDECLARED[name]
    # Connection variables for ansible-inventory to read; neither tool connects.
    files = {**files, "group_vars/all.yml": "ansible_host: 127.0.0.9\n"}
    _write(tmp_path / "inventory", files)
    failing = next(n for n in files if message.startswith(n))

    def ansible() -> dict:
        done = _ansible_inventory([tmp_path / "inventory"], None, tmp_path)
        skipped = f"Unable to parse {tmp_path / 'inventory' / failing} as an inventory source"
        return {"exit": done.returncode, "skipped": skipped in " ".join(done.stderr.split())}

    theirs = differ.cached(f"inventory-{name}", _inputs(tmp_path, []), ansible)
    assert theirs == {"exit": 0, "skipped": True}
    with pytest.raises(InventoryError) as caught:
        load_inventory(tmp_path / "inventory")
    assert str(caught.value).startswith(f"{tmp_path / 'inventory'}/{message}"), caught.value
