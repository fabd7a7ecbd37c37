"""The node login an Ansible inventory leaves out, from ansible.cfg and ANSIBLE_*, and
the host variables that name it, in the order proxmox_pct_remote reads them (measured:
test_ansible_login_differential.py), as `pctfleet inventory show` prints it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet import ansiblecfg, exitcodes
from pctfleet.errors import InputError, InventoryError
from pctfleet.inventory import inventory_from_text
from pctfleet.transport.fixes import host_key_fix

INVENTORY = """\
all:
  hosts:
    gpu-a: {proxmox_vmid: 200, ansible_host: 127.0.0.2}
"""


def login(tmp_path: Path, text: str, env: dict | None = None) -> ansiblecfg.NodeLogin:
    (tmp_path / "ansible.cfg").write_text(text)
    return ansiblecfg.read({"ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), **(env or {})}).login


def test_defaults_user_and_key_outrank_the_paramiko_section_the_port_does_not(tmp_path):
    text = "[defaults]\nremote_user = d\nremote_port = 2201\nprivate_key_file = keys/d\n"
    text += "[paramiko_connection]\nremote_user = p\nremote_port = 2202\nprivate_key_file = p\n"
    read = login(tmp_path, text)
    assert read.user == ("d", f"{tmp_path}/ansible.cfg [defaults] remote_user")
    assert read.port == (2202, f"{tmp_path}/ansible.cfg [paramiko_connection] remote_port")
    assert read.identity[0] == tmp_path / "keys/d"  # [defaults]: beside the file


def test_variables_and_where_they_rank(tmp_path):
    text = "[defaults]\nremote_user = d\nremote_port = 2201\nprivate_key_file = /k/d\n"
    env = {"ANSIBLE_PARAMIKO_REMOTE_USER": "pe", "ANSIBLE_PARAMIKO_PRIVATE_KEY_FILE": "/k/pe"}
    env |= {"ANSIBLE_REMOTE_PORT": "2203"}
    read = login(tmp_path, text, env)
    assert (read.user[0], read.port[0], read.identity[0]) == ("d", 2203, Path("/k/d"))
    env |= {"ANSIBLE_REMOTE_USER": "e", "ANSIBLE_PRIVATE_KEY_FILE": "rel/e"}
    env |= {"ANSIBLE_REMOTE_PARAMIKO_PORT": "2204"}
    read = login(tmp_path, text, env)
    assert (read.user, read.port[0]) == (("e", "ANSIBLE_REMOTE_USER"), 2204)
    assert read.identity[0] == Path.cwd() / "rel/e"  # a variable: from the current folder


def test_a_paramiko_section_key_stays_relative_to_the_current_folder(tmp_path):
    read = login(tmp_path, "[paramiko_connection]\nprivate_key_file = keys/p\n")
    assert read.identity[0] == Path.cwd() / "keys/p"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[defaults]\nremote_port = ssh\n", "[defaults] remote_port: must be a port number"),
        ("[defaults]\nremote_port = 70000\n", "[defaults] remote_port: must be a port number"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_file_and_key(tmp_path, text, message):
    with pytest.raises(InputError) as err:
        login(tmp_path, text)
    assert str(err.value).startswith(f"{tmp_path}/ansible.cfg {message}")


def test_nothing_set_leaves_everything_to_the_inventory(tmp_path):
    assert login(tmp_path, "[defaults]\nforks = 20\n") == ansiblecfg.NodeLogin()


def node(tmp_path: Path, monkeypatch, cfg: str, inventory: str = INVENTORY):  # noqa: ANN201
    (tmp_path / "ansible.cfg").write_text(cfg)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    (container,) = inventory_from_text(inventory).containers
    return container.node


def test_an_ansible_inventory_takes_what_its_variables_leave_out_from_ansible_cfg(
    tmp_path, monkeypatch
):
    cfg = "[defaults]\nremote_user = ops\nremote_port = 2222\nprivate_key_file = ~/.ssh/pve\n"
    got = node(tmp_path, monkeypatch, cfg)
    assert (got.user, got.port, got.identity) == ("ops", 2222, os.path.expanduser("~/.ssh/pve"))
    own = INVENTORY.replace("}", ", ansible_user: root, ansible_port: 22, "
                            "ansible_private_key_file: /k/own}")  # fmt: skip
    got = node(tmp_path, monkeypatch, cfg, own)
    assert (got.user, got.port, got.identity) == ("root", 22, "/k/own")
    got = node(tmp_path, monkeypatch, "")
    assert (got.user, got.port, got.identity) == ("root", 22, None)  # pctfleet's defaults


def test_a_native_inventory_ignores_ansible_cfg(tmp_path, monkeypatch):
    native = "nodes:\n  pve1:\n    address: 127.0.0.2\n    containers: {200: {name: a}}\n"
    got = node(tmp_path, monkeypatch, "[defaults]\nremote_user = ops\n", native)
    assert got.user == "root"


@pytest.mark.parametrize(
    ("host_vars", "expected"),
    [
        ("ansible_ssh_host: 127.0.0.4", ("127.0.0.4", 22, "root")),  # after ansible_host
        (
            "ansible_paramiko_host: 127.0.0.5, ansible_ssh_host: 127.0.0.4",
            ("127.0.0.5", 22, "root"),
        ),
        ("ansible_user: u1, ansible_ssh_user: u2", ("127.0.0.2", 22, "u2")),
        ("ansible_paramiko_user: u3, ansible_user: u1", ("127.0.0.2", 22, "u3")),
        ("ansible_port: 2201, ansible_ssh_port: 2202", ("127.0.0.2", 2202, "root")),
        ("ansible_paramiko_port: 2203, ansible_port: 2201", ("127.0.0.2", 2203, "root")),
    ],
)
def test_of_two_names_for_one_setting_the_later_listed_wins(host_vars, expected):
    text = INVENTORY.replace("}", f", {host_vars}}}")
    (container,) = inventory_from_text(text).containers
    assert (container.node.address, container.node.port, container.node.user) == expected


def test_keys_by_any_name_later_listed_winning():
    base = INVENTORY.replace("}", ", ansible_private_key_file: /k/a MORE}")
    for more, key in [
        ("", "/k/a"),
        (", ansible_ssh_private_key_file: /k/b", "/k/b"),
        (", ansible_paramiko_private_key_file: /k/c, ansible_ssh_private_key_file: /k/b", "/k/c"),
    ]:
        (container,) = inventory_from_text(base.replace(" MORE", more)).containers
        assert container.node.identity == key
        assert "ansible_private_key_file" not in container.vars  # a connection variable


def test_a_bad_value_names_the_variable_it_came_from(tmp_path, monkeypatch):
    with pytest.raises(InventoryError) as err:
        inventory_from_text(INVENTORY.replace("}", ", ansible_ssh_port: x}"))
    assert "ansible_ssh_port must be an integer 1-65535, got 'x'" in str(err.value)
    with pytest.raises(InventoryError) as err:
        node(tmp_path, monkeypatch, "[defaults]\nremote_user = -oProxyCommand=x\n")
    assert str(err.value).startswith(f"{tmp_path}/ansible.cfg [defaults] remote_user: ")


def test_a_refused_host_key_says_ansible_cfg_turned_checking_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = False\n")
    fix = host_key_fix("127.0.0.2", "ssh-ed25519", Path("/k"))
    assert f"{tmp_path}/ansible.cfg [defaults] host_key_checking says host_key_checking" in fix
    (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = True\n")
    assert "ansible.cfg" not in host_key_fix("127.0.0.2", "ssh-ed25519", Path("/k"))


def show(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["HOME"] = str(cwd)  # no ~/.ssh/config of this machine's
    argv = [sys.executable, "-m", "pctfleet", "inventory", "show", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def test_inventory_show_prints_the_login_each_command_would_use(tmp_path):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    (tmp_path / "ansible.cfg").write_text(
        "[defaults]\ninventory = hosts.yml\nremote_user = ops\nprivate_key_file = k\n"
    )
    done = show(tmp_path, "--json")
    assert done.returncode == exitcodes.OK, done.stderr
    shown = json.loads(done.stdout)
    assert shown["nodes"] == [
        {"node": "127.0.0.2", "address": "127.0.0.2", "port": 22, "user": "ops",
         "identities": [str(tmp_path / "k")], "proxy_jump": None}
    ]  # fmt: skip
    assert shown["containers"] == [
        {"name": "gpu-a", "node": "127.0.0.2", "ctid": 200, "groups": ["ungrouped"]}
    ]
    done = show(tmp_path, "--user", "root", "--port", "2222")  # the command line on top
    assert done.stdout.splitlines() == [
        f"127.0.0.2: root@127.0.0.2:2222 (key: {tmp_path / 'k'})",
        "  200  gpu-a  [ungrouped]",
    ]


def test_force_handlers_from_ansible_cfg_or_its_variable(tmp_path):
    path = tmp_path / "ansible.cfg"
    path.write_text("[defaults]\nforce_handlers = yes\n")
    assert ansiblecfg.read({"ANSIBLE_CONFIG": str(path)}).force_handlers is True
    env = {"ANSIBLE_CONFIG": str(path), "ANSIBLE_FORCE_HANDLERS": "0"}
    assert ansiblecfg.read(env).force_handlers is False
    for lenient in ("sometimes", "1.0", '"true"'):  # ansible-core: anything else is false
        path.write_text(f"[defaults]\nforce_handlers = {lenient}\n")
        assert ansiblecfg.read({"ANSIBLE_CONFIG": str(path)}).force_handlers is False


def test_a_rollout_forces_handlers_as_asked_and_keeps_it_for_resume(tmp_path, monkeypatch):
    from pctfleet.cli.rollout import RolloutArgs, _plan

    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    (tmp_path / "ansible.cfg").write_text("")
    args = RolloutArgs(playbook=tmp_path / "site.yml", inventory=None)
    assert _plan(args, None, [], None).options.force_handlers is False
    forced = RolloutArgs(playbook=tmp_path / "site.yml", inventory=None, force_handlers=True)
    assert _plan(forced, None, [], None).options.force_handlers is True
    assert forced.params()["force_handlers"] is True  # a resume repeats it
    (tmp_path / "ansible.cfg").write_text("[defaults]\nforce_handlers = True\n")
    assert _plan(args, None, [], None).options.force_handlers is True


def test_string_settings_lose_their_quotes_and_plugin_paths_keep_their_dollars(tmp_path):
    text = "[defaults]\nremote_user = \"alice\"\nansible_managed = 'by {uid}'\n"
    text += "[paramiko_connection]\nprivate_key_file = '~/k/$NAME'\n"
    read = login(tmp_path, text)
    assert read.user[0] == "alice"
    assert read.identity[0] == Path(os.path.expanduser("~/k/$NAME"))  # the plugin: ~ only
    assert ansiblecfg.read({"ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")}).managed == "by {uid}"
    read = login(tmp_path, "[defaults]\nprivate_key_file = ~/k/$HOME\n")
    assert read.identity[0] == Path(os.path.expanduser(f"~/k/{os.environ['HOME']}"))


def test_a_host_key_checking_value_ansible_reads_as_false_is_no_error(tmp_path):
    read = login(tmp_path, "[defaults]\nhost_key_checking = maybe\n")
    assert read.host_key_checking[0] is False
