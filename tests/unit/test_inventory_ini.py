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
from pctfleet.inventory.hostrange import expand_hosts
from pctfleet.playbook import vault

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
        ("[gpu]\ngpu-[1:x] proxmox_vmid=200\n", "hosts:2: host range 'gpu-[1:x]' is not numbers"),
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


@pytest.mark.parametrize(
    ("pattern", "hosts"),
    [
        ("gpu-[01:03]", ["gpu-01", "gpu-02", "gpu-03"]),
        ("gpu-[8:12:2]", ["gpu-8", "gpu-10", "gpu-12"]),
        ("n[a:c]", ["na", "nb", "nc"]),
        ("r[1:2]-[a:b]", ["r1-a", "r1-b", "r2-a", "r2-b"]),
        ("[:1]x", ["0x", "1x"]),
    ],
)
def test_host_ranges_expand_as_in_ansible(pattern, hosts):
    assert expand_hosts(pattern, "t") == hosts


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("gpu-[1]", "must be [begin:end] or [begin:end:step]"),
        ("gpu-[1:]", "must give its end"),
        ("gpu-[01:100]", "same width"),
        ("gpu-[c:a]", "begin <= end"),
        ("gpu-[1:x]", "is not numbers or letters"),
    ],
)
def test_a_bad_host_range_is_refused(pattern, message):
    with pytest.raises(InputError, match=re.escape(message)):
        expand_hosts(pattern, "t")


def test_a_range_in_either_format_names_each_host(tmp_path):
    ini = "[gpu]\ngpu-[1:2] ansible_host=127.0.0.9\n"
    yml = "all:\n  hosts:\n    'gpu-[1:2]': {ansible_host: 127.0.0.9}\n"
    for name, text in (("hosts.ini", ini), ("hosts.yml", yml)):
        (tmp_path / "host_vars").mkdir(exist_ok=True)
        for n in (1, 2):
            (tmp_path / "host_vars" / f"gpu-{n}.yml").write_text(f"proxmox_vmid: {200 + n}\n")
        inv = _load(tmp_path, text, name)
        assert [(c.host, c.ctid) for c in inv.containers] == [("gpu-1", 201), ("gpu-2", 202)]


def test_two_hosts_on_one_container_are_refused(tmp_path):
    with pytest.raises(InputError, match="host 'gpu-b': container 127.0.0.9/200 is host 'gpu-a'"):
        _load(tmp_path, "[gpu]\ngpu-[a:b] proxmox_vmid=200 ansible_host=127.0.0.9\n")


def test_a_vault_encrypted_ini_file_is_refused_by_name(tmp_path):
    ansible_vault = Path("/var/cache/pctfleet/bench-ansible-venv/bin/ansible-vault")
    if not (ansible_vault.parent.parent / ".pctfleet-bench").exists():  # a whole venv
        pytest.skip("needs ansible-vault (installed by the differential tests)")
    (tmp_path / "pass").write_text("hunter2\n")
    (tmp_path / "hosts").write_text(f"[gpu]\n{HOST}\n")
    argv = [str(ansible_vault), "encrypt", "--vault-password-file", str(tmp_path / "pass")]
    subprocess.run([*argv, str(tmp_path / "hosts")], check=True, capture_output=True)
    vault.set_vault_secrets([vault.VaultSecret("default", b"hunter2")])
    try:
        with pytest.raises(InputError, match="hosts: a vault-encrypted INI inventory is not"):
            load_inventory(tmp_path / "hosts")
    finally:
        vault.set_vault_secrets([])


@pytest.mark.parametrize("pattern", ["h[1:1000000000]", "h[1:9999]x[1:999]"])
def test_a_huge_range_is_refused_before_any_name_is_made(pattern):
    with pytest.raises(InputError, match="names more than 10000 hosts"):
        expand_hosts(pattern, "t")


def test_a_range_with_a_port_gives_each_host_the_port(tmp_path):
    text = "[gpu]\ngpu-[1:2]:2222 ansible_host=127.0.0.9\n"
    (tmp_path / "host_vars").mkdir()
    for n in (1, 2):
        (tmp_path / "host_vars" / f"gpu-{n}").write_text(f"proxmox_vmid: {200 + n}\n")
    inv = _load(tmp_path, text)
    assert [(c.host, c.node.port) for c in inv.containers] == [("gpu-1", 2222), ("gpu-2", 2222)]
    with pytest.raises(InputError, match="bracketed address as host name is not supported"):
        _load(tmp_path, "[gpu]\n[fe80::1]:2222 proxmox_vmid=200\n")


def test_an_ini_file_whose_first_line_is_a_bare_host_is_still_ini(tmp_path):
    inv = _load(tmp_path, f"h0\n[gpu]\n{HOST}\n")
    assert [c.host for c in inv.containers] == ["gpu-a"]
    inv = _load(tmp_path, "h0:2222 proxmox_vmid=200 ansible_host=127.0.0.9\n")
    assert inv.containers[0].node.port == 2222


def test_ungrouped_hosts_get_the_ungrouped_vars_and_line_order_wins(tmp_path):
    """ansible-inventory gives h0 u=1 and h1 v=from-b (measured)."""
    text = "h0 proxmox_vmid=199 ansible_host=127.0.0.9\n[ungrouped:vars]\nu=1\n"
    text += "[b:vars]\nz=1\n[a]\nh1 proxmox_vmid=200 ansible_host=127.0.0.9 v=from-a\n"
    text += "[b]\nh1 v=from-b\n"
    inv = _load(tmp_path, text)
    h0, h1 = inv.containers
    assert (h0.groups, inv.vars_for(h0)["u"]) == (("ungrouped",), 1)
    assert (h1.groups, inv.vars_for(h1)["v"], "u" in inv.vars_for(h1)) == (
        ("a", "b"),
        "from-b",
        False,
    )


def test_a_range_met_again_takes_its_later_values_as_in_ansible(tmp_path):
    """ansible-inventory gives gpu-1 x=3 here (measured)."""
    text = "[gpu]\ngpu-[1:2] proxmox_vmid=200 ansible_host=10.0.0.1 x=1\n"
    text += "[web]\ngpu-1 x=2 proxmox_vmid=201\n[db]\ngpu-[1:2] x=3\n"
    inv = _load(tmp_path, text)
    got = [(c.host, c.ctid, inv.vars_for(c)["x"]) for c in inv.containers]
    assert got == [("gpu-1", 201, 3), ("gpu-2", 200, 3)]


def test_ungrouped_is_there_even_when_empty(tmp_path):
    inv = _load(tmp_path, f"[gpu]\n{HOST}\n")
    assert inv.groups["ungrouped"].members == () and inv.matching("ungrouped") == []
