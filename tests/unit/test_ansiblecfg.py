"""ansible.cfg found and read as ansible-core finds it: inventory, vault_password_file and
roles_path, so `pctfleet run site.yml` works in a repository made for ansible-playbook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet import ansiblecfg, exitcodes
from pctfleet.errors import InputError

VAULT_FIXTURES = Path(__file__).parent / "vault_fixtures"


def cfg(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ansible.cfg").write_text(text)
    return folder / "ansible.cfg"


def test_the_first_config_found_is_read_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(ansiblecfg, "HOME_CONFIG", "~/.ansible.cfg")
    env = {"HOME": str(tmp_path / "home")}
    home = cfg(tmp_path / "home", "[defaults]\ninventory = from-home.yml\n").rename(
        tmp_path / "home/.ansible.cfg"
    )
    here = cfg(tmp_path / "repo", "[defaults]\nroles_path = r\n")
    named = cfg(tmp_path / "named", "[defaults]\ninventory = named.ini\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", env["HOME"])
        assert ansiblecfg.find({"ANSIBLE_CONFIG": str(named.parent)}, here.parent) == named
        assert ansiblecfg.find({"ANSIBLE_CONFIG": str(named)}, here.parent) == named
        assert ansiblecfg.find({}, here.parent) == here
        assert ansiblecfg.find({}, tmp_path) == home
        read = ansiblecfg.read({}, here.parent)  # one file, never merged with home's
        assert (read.path, read.inventory, read.roles_path) == (here, (), (here.parent / "r",))


def test_a_world_writable_current_folder_is_not_trusted(tmp_path, monkeypatch):
    here = cfg(tmp_path / "shared", "[defaults]\ninventory = x.yml\n")
    here.parent.chmod(0o777)
    assert ansiblecfg.find({}, here.parent) is None
    assert ansiblecfg.find({"ANSIBLE_CONFIG": str(here)}, here.parent) == here


def test_paths_are_relative_to_the_file_and_variables_to_the_current_folder(tmp_path):
    text = "[defaults]\ninventory = inv/a.yml, /abs/b.ini\nroles_path = r1:~/r2\n"
    text += "vault_password_file = secret.txt\n"
    path = cfg(tmp_path / "repo", text)
    read = ansiblecfg.read({"ANSIBLE_CONFIG": str(path)}, tmp_path / "elsewhere")
    assert read.inventory == (path.parent / "inv/a.yml", Path("/abs/b.ini"))
    assert read.roles_path == (path.parent / "r1", Path(os.path.expanduser("~/r2")))
    assert read.vault_password_file == path.parent / "secret.txt"
    env = {"ANSIBLE_CONFIG": str(path), "ANSIBLE_INVENTORY": "hosts.ini"}
    assert ansiblecfg.read(env, tmp_path).inventory == (tmp_path / "hosts.ini",)


def test_comments_after_a_semicolon_and_variables_in_paths_as_in_ansible(tmp_path):
    """Read off `ansible-config dump` (ansible-core 2.19) for the same file."""
    text = "[defaults]\ninventory = hosts.ini ; prod\nvault_password_file = $PASS_DIR/.vp\n"
    path = cfg(tmp_path, text)
    read = ansiblecfg.read({"ANSIBLE_CONFIG": str(path)}, tmp_path)
    assert read.inventory == (tmp_path / "hosts.ini",)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PASS_DIR", "/secrets")
        read = ansiblecfg.read({"ANSIBLE_CONFIG": str(path)}, tmp_path)
    assert read.vault_password_file == Path("/secrets/.vp")


def test_a_broken_file_is_one_line_naming_it(tmp_path):
    path = cfg(tmp_path, "inventory = x\n")  # no section header
    with pytest.raises(InputError) as err:
        ansiblecfg.read({"ANSIBLE_CONFIG": str(path)}, tmp_path)
    assert str(err.value).startswith(f"{path}: not a valid ansible.cfg: ")
    assert "\n" not in str(err.value)


def pctfleet(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")} | (env or {})
    env["HOME"] = str(cwd)
    argv = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def repo(tmp_path: Path, config: str) -> Path:
    """An Ansible user's repository: ansible.cfg, an INI inventory, a vaulted group_vars."""
    root = tmp_path / "repo"
    (root / "inventory/group_vars/all").mkdir(parents=True)
    (root / "inventory/hosts.ini").write_text(
        "[gpu]\nct200 ansible_host=127.0.0.1 ansible_port=1 ansible_user=root proxmox_vmid=200\n"
    )
    shutil.copy(VAULT_FIXTURES / "vars11.yml", root / "inventory/group_vars/all/vault.yml")
    (root / ".vault-pass").write_text("hunter2\n")
    cfg(root, config)
    return root


CONFIG = "[defaults]\ninventory = inventory/hosts.ini\nvault_password_file = .vault-pass\n"


def test_without_i_the_configured_inventory_and_vault_password_are_used(tmp_path):
    root = repo(tmp_path, CONFIG)
    done = pctfleet(root, "exec", "--connect-timeout", "2", "--json", "--", "true")
    # Read, vault included, up to the login: the node's port 1 refuses it.
    assert done.returncode == exitcodes.UNREACHABLE, done.stderr
    assert "cannot reach 127.0.0.1:1" in done.stdout


def test_a_configured_inventory_needs_its_vault_password_like_any_other(tmp_path):
    root = repo(tmp_path, CONFIG.replace("vault_password_file = .vault-pass\n", ""))
    done = pctfleet(root, "exec", "--", "true")
    assert done.returncode == exitcodes.PARSE_ERROR
    assert "vault-encrypted data but no vault password" in done.stderr


def test_where_nothing_says_where_ansible_cfg_is_named_as_a_way(tmp_path):
    (tmp_path / "empty.cfg").write_text("[defaults]\n")  # not this machine's /etc/ansible
    done = pctfleet(tmp_path, "exec", "--", "true", env={"ANSIBLE_CONFIG": "empty.cfg"})
    assert done.returncode == exitcodes.BAD_OPTIONS
    assert "or 'inventory =' in ansible.cfg" in done.stderr


def test_a_configured_inventory_that_is_not_there_names_the_config(tmp_path):
    cfg(tmp_path, "[defaults]\ninventory = nope.ini\n")
    done = pctfleet(tmp_path, "exec", "--", "true")
    assert done.returncode == exitcodes.BAD_OPTIONS
    assert f"{tmp_path / 'ansible.cfg'}: inventory {tmp_path / 'nope.ini'} not found" in done.stderr


def test_roles_path_comes_from_the_config_in_the_current_folder(tmp_path):
    """As ansible-playbook: the ansible.cfg where the command runs, not the playbook's."""
    cfg(tmp_path, "[defaults]\nroles_path = shared/roles\n")
    (tmp_path / "shared/roles/greet/tasks").mkdir(parents=True)
    (tmp_path / "shared/roles/greet/tasks/main.yml").write_text("- debug: {msg: hello}\n")
    (tmp_path / "plays").mkdir()
    (tmp_path / "plays/book.yml").write_text("- hosts: all\n  roles: [greet]\n")
    done = pctfleet(tmp_path, "run", "plays/book.yml", "--local", "--json")
    assert done.returncode == exitcodes.OK, done.stderr
    assert '"msg": "hello"' in done.stdout


def test_ct_without_host_is_refused_not_read_as_the_whole_inventory(tmp_path):
    root = repo(tmp_path, CONFIG)
    done = pctfleet(root, "exec", "--ct", "200", "--", "true")
    assert done.returncode == exitcodes.BAD_OPTIONS
    assert "--ct needs --host" in done.stderr


def test_inventory_discover_reads_the_configured_inventory_too(tmp_path):
    root = repo(tmp_path, CONFIG)
    done = pctfleet(root, "inventory", "discover", "--connect-timeout", "2", "--json")
    assert "127.0.0.1" in done.stdout + done.stderr, (done.stdout, done.stderr)


def test_vault_identity_list_adds_its_passwords(tmp_path):
    root = repo(tmp_path, "[defaults]\ninventory = inventory/hosts.ini\n")
    (root / "ansible.cfg").write_text(
        "[defaults]\ninventory = inventory/hosts.ini\nvault_identity_list = dev@.vault-pass\n"
    )
    done = pctfleet(root, "exec", "--connect-timeout", "2", "--json", "--", "true")
    assert done.returncode == exitcodes.UNREACHABLE, done.stderr  # unlocked, then port 1


def test_settings_that_change_a_run_and_are_not_followed_are_named(tmp_path):
    (tmp_path / "site.yml").write_text("- hosts: all\n  tasks: [{debug: {msg: hi}}]\n")
    text = "[defaults]\nhash_behaviour = merge\nerror_on_undefined_vars = True\n"
    cfg(tmp_path, text + "[privilege_escalation]\nbecome_user = postgres\n")
    done = pctfleet(tmp_path, "run", "site.yml", "--local", "--json")
    assert done.returncode == exitcodes.OK, done.stderr
    where = tmp_path / "ansible.cfg"
    expected = [
        f"{where} [defaults] hash_behaviour = 'merge' is not followed: a variable set twice "
        "is replaced, not merged",
        f"{where} [privilege_escalation] become_user = 'postgres' is not followed: tasks run "
        "as root, through pct exec",
    ]
    assert json.loads(done.stdout)["warnings"] == expected
    assert [line.removeprefix("warning: ") for line in done.stderr.splitlines()
            if line.startswith("warning: ")] == expected  # fmt: skip


def test_any_errors_fatal_of_ansible_cfg_is_a_play_s_default(tmp_path, monkeypatch):
    from pctfleet.modules import known_args
    from pctfleet.playbook.loader import load_playbook

    (tmp_path / "site.yml").write_text(
        "- hosts: all\n  tasks: []\n- hosts: all\n  any_errors_fatal: false\n  tasks: []\n"
    )
    monkeypatch.setenv("ANSIBLE_CONFIG", str(cfg(tmp_path, "[defaults]\nany_errors_fatal = 1\n")))
    plays = load_playbook(tmp_path / "site.yml", known_args()).plays
    assert [p.any_errors_fatal for p in plays] == [True, False]
