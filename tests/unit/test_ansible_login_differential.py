"""Which user, port and address proxmox_pct_remote logs in with, read off
`ansible-playbook -vvv` ("ESTABLISH PARAMIKO SSH CONNECTION FOR USER: u on PORT p TO a"),
against what `pctfleet inventory show` says for the same inventory, ansible.cfg and
ANSIBLE_* variables. Nothing listens on the 127.0.0.x addresses: every login is refused
after that line, at once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import ansible_env  # noqa: E402

PLAY = "- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n"
ESTABLISH = re.compile(r"ESTABLISH PARAMIKO SSH CONNECTION FOR USER: (\S+) on PORT (\d+) TO (\S+)")

# (ansible.cfg, ANSIBLE_* variables, each host's variables): every host has its own
# address, so each ESTABLISH line names its host.
CASES = {
    "host variables": (
        "",
        {},
        [
            "ansible_host: 127.0.0.2, ansible_ssh_host: 127.0.0.3",
            "ansible_host: 127.0.0.4, ansible_paramiko_host: 127.0.0.5, "
            "ansible_ssh_host: 127.0.0.6",
            "ansible_host: 127.0.0.7, ansible_user: u1, ansible_ssh_user: u2, ansible_port: 2201, "
            "ansible_ssh_port: 2202",
            "ansible_host: 127.0.0.8, ansible_paramiko_user: u3, ansible_user: u1, "
            "ansible_paramiko_port: 2203, ansible_port: 2201",
        ],
    ),
    "ansible.cfg under host variables": (
        "[defaults]\nremote_user = cfg\nremote_port = 2299\n",
        {},
        ["ansible_host: 127.0.0.9", "ansible_host: 127.0.0.10, ansible_user: own, ansible_port: 2"],
    ),
    "[defaults] user over [paramiko_connection], port the other way": (
        "[defaults]\nremote_user = d\nremote_port = 2201\n"
        "[paramiko_connection]\nremote_user = p\nremote_port = 2202\n",
        {},
        ["ansible_host: 127.0.0.11"],
    ),
    "[paramiko_connection] alone": (
        "[paramiko_connection]\nremote_user = p\nremote_port = 2202\n",
        {},
        ["ansible_host: 127.0.0.12"],
    ),
    "variables over the file, but not the paramiko user": (
        "[defaults]\nremote_user = d\nremote_port = 2201\n",
        {"ANSIBLE_PARAMIKO_REMOTE_USER": "pe", "ANSIBLE_REMOTE_PORT": "2203"},
        ["ansible_host: 127.0.0.13"],
    ),
    "both variables of each": (
        "[defaults]\nremote_user = d\n",
        {
            "ANSIBLE_REMOTE_USER": "e",
            "ANSIBLE_PARAMIKO_REMOTE_USER": "pe",
            "ANSIBLE_REMOTE_PORT": "2203",
            "ANSIBLE_REMOTE_PARAMIKO_PORT": "2204",
        },
        ["ansible_host: 127.0.0.14"],
    ),
    "nothing set": ("", {}, ["ansible_host: 127.0.0.15"]),
}


@pytest.fixture(scope="module")
def venv() -> Path:
    return ansible_env.ensure_venv(lambda _: None)


def write_case(folder: Path, cfg: str, hosts: list[str]) -> None:
    folder.mkdir()
    lines = ["all:", "  hosts:"]
    lines += [f"    h{n}: {{proxmox_vmid: 200, {v}}}" for n, v in enumerate(hosts)]
    (folder / "hosts.yml").write_text("\n".join(lines) + "\n")
    (folder / "ansible.cfg").write_text(f"[defaults]\ninventory = hosts.yml\n{cfg}".replace(
        "\n[defaults]\n", "\n", 1))  # fmt: skip
    (folder / "play.yml").write_text(PLAY)


def environment(folder: Path, variables: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    return env | {"HOME": str(folder), "ANSIBLE_LOCAL_TEMP": str(folder / "tmp")} | variables


def ansible_logins(venv: Path, folder: Path, variables: dict[str, str]) -> set[tuple]:
    argv = [str(venv / "bin/ansible-playbook"), "-vvv", "play.yml"]
    argv += ["-c", "community.proxmox.proxmox_pct_remote"]
    env = environment(folder, variables)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=folder, env=env, timeout=300)
    found = ESTABLISH.findall(done.stdout)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return {(u, int(p), a) for u, p, a in found}


def pctfleet_logins(folder: Path, variables: dict[str, str]) -> set[tuple]:
    argv = [sys.executable, "-m", "pctfleet", "inventory", "show", "--json"]
    env = environment(folder, variables)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=folder, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return {(n["user"], n["port"], n["address"]) for n in json.loads(done.stdout)["nodes"]}


@pytest.mark.parametrize("case", CASES)
def test_the_same_login_as_ansible_playbook(venv, tmp_path, case):
    cfg, variables, hosts = CASES[case]
    write_case(tmp_path / "repo", cfg, hosts)
    theirs = ansible_logins(venv, tmp_path / "repo", variables)
    assert len(theirs) == len(hosts)
    assert ({u for u, _, _ in theirs} == {"None"}) == (case == "nothing set")
    # No user anywhere: Ansible logs in as the local user, pctfleet as root (documented).
    theirs = {("root" if u == "None" else u, p, a) for u, p, a in theirs}
    assert pctfleet_logins(tmp_path / "repo", variables) == theirs
