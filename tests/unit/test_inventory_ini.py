"""Ansible INI inventories and inventory folders: what is read, and the one-line
errors for what is not (tests/integration/test_inventory_differential.py compares
the variables and groups with ansible-inventory's)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.errors import InputError
from pctfleet.inventory import load_inventory

HOST = "gpu-a proxmox_vmid=200 ansible_host=127.0.0.9"


def _load(tmp_path: Path, text: str, name: str = "hosts") -> object:
    (tmp_path / name).write_text(text)
    return load_inventory(tmp_path / name)


@pytest.mark.parametrize("name", ["hosts", "hosts.ini", "inventory.cfg"])
def test_an_ini_file_is_read_whatever_its_name(tmp_path, name):
    inv = _load(tmp_path, f"[gpu]\n{HOST} port=30001\n", name)
    (container,) = inv.containers
    assert (container.key, container.host, container.groups) == ("127.0.0.9/200", "gpu-a", ("gpu",))
    assert inv.vars_for(container)["port"] == 30001


def test_a_yaml_file_is_never_taken_for_ini(tmp_path):
    native = "nodes:\n  pve1:\n    address: 127.0.0.9\n    containers: [200]\n"
    assert [c.key for c in _load(tmp_path, native, "fleet.ini").containers] == ["pve1/200"]


def test_a_host_port_is_the_nodes_port(tmp_path):
    (container,) = _load(tmp_path, "[gpu]\ngpu-a:2222 proxmox_vmid=200 ansible_host=h\n").containers
    assert container.node.port == 2222


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[gpu:vars]\nx=1\n", "hosts:1: section [gpu:vars] is for a group declared nowhere"),
        ("[a:children]\nb\n", "hosts:2: section [a:children] names a group declared nowhere: 'b'"),
        ("[gpu:hostz]\n", "hosts:1: section [gpu:hostz] has an unknown type: 'hostz'"),
        ("[gpu one]\n", "hosts:1: invalid section '[gpu one]'"),
        (f"[gpu]\n{HOST} oops\n", "hosts:2: expected key=value after the host name, got 'oops'"),
        ("[gpu]\ngpu-[1:3] proxmox_vmid=200\n", "hosts:2: host ranges such as 'gpu-[1:3]'"),
        ("[gpu]\ngpu-a:ssh x=1\n", "hosts:2: 'gpu-a:ssh': the port after ':' must be a number"),
        ("[gpu:vars]\n[gpu]\nh x=1\n[gpu:vars]\nnovalue\n", "hosts:5: expected key=value"),
        (f'[gpu]\n{HOST} x="open\n', "hosts:2: cannot read the host line"),
    ],
)
def test_a_bad_ini_line_is_one_line_naming_it(tmp_path, text, message):
    with pytest.raises(InputError) as caught:
        _load(tmp_path, text)
    assert str(caught.value).startswith(f"{tmp_path}/{message}"), str(caught.value)


def test_a_group_used_before_its_section_is_fine(tmp_path):
    text = f"[fleet:children]\ngpu\n[gpu:vars]\nx=1\n[gpu]\n{HOST}\n"
    inv = _load(tmp_path, text)
    assert inv.vars_for(inv.containers[0])["x"] == 1
    assert inv.groups["fleet"].members == (inv.containers[0].key,)


def test_a_folder_reads_its_inventory_files_and_skips_the_rest(tmp_path):
    (tmp_path / "a.yml").write_text(
        "all:\n  hosts:\n    gpu-a: {proxmox_vmid: 200, ansible_host: 127.0.0.9}\n"
    )
    (tmp_path / "b.ini").write_text("[gpu]\ngpu-a x=2\n")
    (tmp_path / "notes.md").write_text("# not an inventory\n")
    (tmp_path / "old.yml.bak").write_text("{{{")
    inv = load_inventory(tmp_path)
    (container,) = inv.containers
    assert container.groups == ("gpu",) and inv.vars_for(container)["x"] == 2


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"notes.md": "x\n"}, "no inventory file in this folder"),
        (
            {"n.yml": "nodes:\n  pve1:\n    containers: [200]\n"},
            "n.yml: a folder inventory holds Ansible inventories (YAML or INI) only",
        ),
    ],
)
def test_a_folder_without_ansible_inventories_is_refused(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        load_inventory(tmp_path)


def test_the_cli_reads_an_ini_inventory_and_refuses_a_bad_one_in_one_line(tmp_path):
    (tmp_path / "hosts").write_text(f"[gpu]\n{HOST}\n[gpu:vars]\nbroken\n")
    argv = [sys.executable, "-m", "pctfleet", "exec", "-i", str(tmp_path / "hosts"), "--", "true"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == exitcodes.PARSE_ERROR
    assert done.stderr == f"error: {tmp_path}/hosts:4: expected key=value, got 'broken'\n"
