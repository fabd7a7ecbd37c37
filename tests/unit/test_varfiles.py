"""group_vars/ and host_vars/ beside the inventory and the playbook: found, read and
ordered as ansible-core 2.19 does (each expectation below was read off
ansible-playbook's output for the same files; tests/integration/
test_varfiles_differential.py compares the two tools on the lab)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.errors import InputError
from pctfleet.inventory import load_inventory
from pctfleet.inventory.varfiles import find_files
from pctfleet.playbook import vault
from pctfleet.playbook.templating import Secret

VAULT_FIXTURES = Path(__file__).parent / "vault_fixtures"
TREE = Path(__file__).parents[1] / "varfiles"  # inv/ and play/, each with its vars folders

# What ansible-playbook 2.19 wrote for tests/varfiles (play/site.yml) with the
# vault file below in play/group_vars/gpu/ (ansible_connection local).
ANSIBLE_SAYS = {
    "p1": "f-all",  # group_vars/all wins over the inventory file's group vars
    "p2": "f-fleet",
    "p3": "inv-host",
    "p4": "inv-all",
    "p5": "inv-fleet",
    "p6": "f-gpu-20",  # a folder's files in sorted order, later ones win
    "p7": "f-host",
    "p8": "play-all",  # the playbook's folder after the inventory's
    "p9": "f-all",
    "p10": "f-fleet",
    "p11": "play-host",
    "p12": "play-all",
    "p13": "play-fleet-no-extension",  # NAME before NAME.yml/.yaml/.json
    "p14": "f-gpu-sub",  # subfolders are read, in the sorted order
    "p19": "no extension",
    "p21": "play-all",
    "p22": "f-fleet",  # every folder's `all` comes before any folder's groups
    "x": "alpha",  # ansible_group_priority 10 puts alpha after beta
    "db_password": "s3cret-from-vault",
    "db_port": 5432,
}
NAMES = [*(f"p{n}" for n in range(1, 23)), "x", "db_password", "db_port", "ansible_group_priority"]


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def layout(tmp_path: Path):
    shutil.copytree(TREE, tmp_path, dirs_exist_ok=True)
    (tmp_path / "play/group_vars/gpu").mkdir()
    shutil.copy(VAULT_FIXTURES / "vars11.yml", tmp_path / "play/group_vars/gpu/vault.yml")
    with (tmp_path / "inv/group_vars/all.yml").open("a") as extra:
        extra.write("ansible_host: 127.0.0.9\nansible_user: admin\n")
    vault.set_vault_secrets([vault.VaultSecret("default", b"hunter2")])
    yield tmp_path
    vault.set_vault_secrets([])


def _vars(root: Path, playbook_dir: Path | None = None, inventory: str = "inv/hosts.yml") -> dict:
    inv = load_inventory(root / inventory, playbook_dir)
    (container,) = inv.containers
    return inv.vars_for(container)


def test_every_variable_wins_where_ansible_playbook_says(layout):
    found = _vars(layout, layout / "play")
    assert {n: found.get(n) for n in NAMES} == {n: ANSIBLE_SAYS.get(n) for n in NAMES}
    assert isinstance(found["db_password"], Secret)


def test_connection_variables_from_the_files_place_the_container(layout):
    inv = load_inventory(layout / "inv/hosts.yml")
    (container,) = inv.containers
    assert (container.node.address, container.node.user, container.ctid) == (
        "127.0.0.9",
        "admin",
        200,
    )
    # Consumed by the inventory, as the inventory file's own connection variables are.
    variables = inv.vars_for(container)
    assert not {"ansible_host", "ansible_user", "proxmox_vmid"} & variables.keys()


def test_without_the_playbook_folder_only_the_inventory_folder_counts(layout):
    found = _vars(layout)
    assert (found["p8"], found["p11"], found.get("p21")) == ("f-all", "inv-host", None)
    assert "db_password" not in found


def test_a_playbook_beside_its_inventory_reads_the_files_once(layout):
    assert _vars(layout, layout / "inv") == _vars(layout)
    assert len(load_inventory(layout / "inv/hosts.yml", layout / "inv").var_files) == 1


def test_a_playbook_folder_may_place_containers_too(tmp_path):
    _tree(tmp_path, {"inv/hosts.yml": "all:\n  hosts:\n    h1:\n"})
    _tree(tmp_path, {"play/host_vars/h1.yml": "proxmox_vmid: 201\nansible_host: 127.0.0.8\n"})
    with pytest.raises(InputError, match="no host has 'proxmox_vmid'"):
        load_inventory(tmp_path / "inv/hosts.yml")
    (container,) = load_inventory(tmp_path / "inv/hosts.yml", tmp_path / "play").containers
    assert container.key == "127.0.0.8/201"


def test_the_first_name_found_is_the_only_one_read(tmp_path):
    (tmp_path / "web.yaml").write_text("a: 1\n")
    (tmp_path / "web.json").write_text("{}")
    assert find_files(str(tmp_path), "web") == [str(tmp_path / "web.yaml")]
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "b.yml").write_text("b: 2\n")
    assert find_files(str(tmp_path), "web") == [str(tmp_path / "web" / "b.yml")]
    assert find_files(str(tmp_path), "db") == []


def test_a_priority_that_is_no_integer_is_refused(layout):
    hosts = layout / "inv/hosts.yml"
    hosts.write_text(hosts.read_text().replace("priority: 10", "priority: many"))
    with pytest.raises(InputError, match=r"hosts.yml:\d+: .*ansible_group_priority must be"):
        load_inventory(hosts)


def test_a_native_inventory_reads_group_vars_of_all_and_its_groups(tmp_path):
    native = """\
vars: {a: inventory}
nodes:
  pve1:
    address: 127.0.0.9
    containers:
      200: {name: gpu-a}
groups:
  gpu:
    containers: [gpu-a]
    vars: {b: inventory}
"""
    _tree(tmp_path, {"inv.yml": native, "group_vars/all.yml": "a: file\nb: file\nc: file\n"})
    _tree(tmp_path, {"group_vars/gpu.yml": "c: gpu-file\n", "host_vars/gpu-a.yml": "d: host\n"})
    found = _vars(tmp_path, inventory="inv.yml")
    # A native inventory has no host names: host_vars/ is for Ansible inventories.
    assert (found["a"], found["b"], found["c"], found.get("d")) == (
        "file",
        "file",
        "gpu-file",
        None,
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("all.yml", "- a\n- b\n", "group_vars/all.yml: must hold a mapping of variables"),
        ("all.yml", "bad-name: 1\n", "group_vars/all.yml:1: variable name 'bad-name' is invalid"),
        ("all.yml", "a: [1\n", "group_vars/all.yml:2:1: YAML error"),
        ("all.yml", b"a: \xff\n", "group_vars/all.yml:1: file is not valid UTF-8 text"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path, name, text, message):
    _tree(tmp_path, {"hosts.yml": "all:\n  hosts:\n    h1: {proxmox_vmid: 200, ansible_host: x}\n"})
    path = tmp_path / "group_vars" / name
    path.parent.mkdir()
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputError) as caught:
        load_inventory(tmp_path / "hosts.yml")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_empty_files_add_nothing(tmp_path):
    _tree(tmp_path, {"hosts.yml": "all:\n  hosts:\n    h1: {proxmox_vmid: 200, ansible_host: x}\n"})
    _tree(tmp_path, {"group_vars/all/a.yml": "", "group_vars/all/b.yml": "# nothing\n"})
    _tree(tmp_path, {"group_vars/all/c.yml": "[]\n", "group_vars/all/d.yml": "z: 1\n"})
    assert _vars(tmp_path, inventory="hosts.yml")["z"] == 1


def test_an_encrypted_file_without_its_password_is_one_line_naming_it(layout):
    vault.set_vault_secrets([])
    with pytest.raises(InputError, match=r"gpu/vault.yml: vault-encrypted data but no vault"):
        load_inventory(layout / "inv/hosts.yml", layout / "play")


def test_a_host_name_cannot_lead_out_of_the_folder(tmp_path):
    _tree(tmp_path, {"hosts.yml": "all:\n  hosts:\n    ..: {proxmox_vmid: 200, ansible_host: x}\n"})
    _tree(tmp_path, {"host_vars/x.yml": "a: 1\n", "leak.yml": "a: leaked\n"})
    assert "a" not in _vars(tmp_path, inventory="hosts.yml")


def _run_local(tmp_path: Path) -> dict:
    book = tmp_path / "play" / "book.yml"
    book.write_text(
        textwrap.dedent("""\
        - hosts: all
          gather_facts: false
          tasks:
            - debug: {msg: "{{ greeting }} {{ target | default('none') }}"}
        """)
    )
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == exitcodes.OK, done.stderr
    return json.loads(done.stdout)


def test_run_reads_the_playbook_folder_group_vars(tmp_path):
    _tree(tmp_path, {"play/group_vars/all.yml": "greeting: hello from group_vars\n"})
    report = _run_local(tmp_path)
    (task,) = report["containers"][0]["tasks"]
    assert task["msg"] == "hello from group_vars none"


def test_a_bad_file_stops_run_before_any_login(tmp_path):
    _tree(tmp_path, {"hosts.yml": "all:\n  hosts:\n    h1: {proxmox_vmid: 200, ansible_host: x}\n"})
    _tree(tmp_path, {"play/group_vars/all.yml": "- a\n", "play/book.yml": "- hosts: all\n"})
    argv = [sys.executable, "-m", "pctfleet", "run", str(tmp_path / "play/book.yml")]
    argv += ["-i", str(tmp_path / "hosts.yml")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == exitcodes.PARSE_ERROR
    assert done.stderr.strip() == (
        f"error: {tmp_path}/play/group_vars/all.yml: must hold a mapping of variables, got ['a']"
    )


@pytest.mark.parametrize("inventory", ["native", "ansible"])
def test_a_bad_file_fails_the_load_whatever_the_format(tmp_path, inventory):
    """Read when the inventory is read, before `select` starts any login."""
    native = "nodes:\n  pve1:\n    address: 127.0.0.9\n    containers: [200]\n"
    ansible = "all:\n  hosts:\n    h1: {proxmox_vmid: 200, ansible_host: 127.0.0.9}\n"
    _tree(tmp_path, {"inv.yml": native if inventory == "native" else ansible})
    _tree(tmp_path, {"play/group_vars/all.yml": "- a\n"})
    assert load_inventory(tmp_path / "inv.yml")  # the playbook's folder not asked for
    with pytest.raises(InputError, match="play/group_vars/all.yml: must hold a mapping"):
        load_inventory(tmp_path / "inv.yml", tmp_path / "play")


def test_host_and_local_read_the_playbook_folder_files_at_once(tmp_path):
    from pctfleet.inventory import adhoc_inventory
    from pctfleet.inventory.load import with_var_files
    from pctfleet.inventory.local import local_inventory

    _tree(tmp_path, {"play/group_vars/all.yml": "- a\n"})
    for inv in (adhoc_inventory("127.0.0.9", [200]), local_inventory()):
        with pytest.raises(InputError, match="must hold a mapping"):
            with_var_files(inv, [tmp_path / "play"])


def test_inventory_discover_takes_the_vault_password_for_the_vars_files(tmp_path):
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    shutil.copy(VAULT_FIXTURES / "vars11.yml", tmp_path / "group_vars/all/vault.yml")
    # Port 1 on loopback: nothing listens, so the read fails after the inventory loaded.
    host = "h1: {proxmox_vmid: 200, ansible_host: 127.0.0.1, ansible_port: 1}"
    _tree(tmp_path, {"hosts.yml": f"all:\n  hosts:\n    {host}\n", "pass": "hunter2\n"})
    argv = [sys.executable, "-m", "pctfleet", "inventory", "discover", "-i"]
    argv += [str(tmp_path / "hosts.yml"), "--connect-timeout", "2"]

    def said(*more: str) -> subprocess.CompletedProcess:
        return subprocess.run([*argv, *more], capture_output=True, text=True, timeout=60)

    locked = said()
    assert locked.returncode == exitcodes.PARSE_ERROR and "vault.yml" in locked.stderr
    opened = said("--vault-password-file", str(tmp_path / "pass"))
    assert opened.returncode == exitcodes.UNREACHABLE, opened.stderr
    assert "cannot reach 127.0.0.1:1" in opened.stderr


def test_the_api_opens_vaulted_vars_files_with_a_password_file(tmp_path):
    from pctfleet.api import Fleet

    native = "nodes:\n  pve1:\n    address: 127.0.0.9\n    containers: [200]\n"
    _tree(tmp_path, {"inv.yml": native, "pass": "hunter2\n"})
    (tmp_path / "group_vars").mkdir()
    shutil.copy(VAULT_FIXTURES / "vars11.yml", tmp_path / "group_vars/all.yml")
    with pytest.raises(InputError, match="no vault password given"):
        Fleet.from_inventory(tmp_path / "inv.yml")
    try:
        fleet = Fleet.from_inventory(tmp_path / "inv.yml", vault_password_file=tmp_path / "pass")
        assert [c.name for c in fleet.containers] == ["pve1/200"]
        fleet.close()
    finally:
        vault.set_vault_secrets([])


@pytest.mark.parametrize("command", ["doctor", "inventory discover"])
def test_commands_reading_the_vars_folders_take_the_vault_options(command):
    argv = [sys.executable, "-m", "pctfleet", *command.split(), "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert "--vault-password-file" in done.stdout
