"""The node's key as ansible.cfg and ANSIBLE_* name it, through ansible-playbook
(proxmox_pct_remote) and pctfleet on the lab's real sshd: which key file wins, and
where a relative one is looked for, decide whether each logs in. The inventory names
only the node's address and the container; ansible.cfg names the user. Neither tool
has an agent or a ~/.ssh key to fall back on, so a wrong key is an unreachable node."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import differ
import pytest

from pctfleet import exitcodes

pytestmark = pytest.mark.lab

PLAY = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: 'true'\n"
BENCH_CFG = differ.ansible_env.HERE / "ansible/ansible.cfg"

# (ansible.cfg lines after [defaults], ANSIBLE_* variables, host variables, what
# ansible-core 2.19 did with them, measured on this lab): paths
# RIGHT and WRONG are the lab's key and another; "keys/lab" exists beside ansible.cfg
# and, as "cwd/lab", in the folder both tools run in (not the same folder).
CASES = {
    "[defaults] key, relative to the file": ("private_key_file = keys/lab\n", {}, "", "ok"),
    "a host variable over [defaults]": (
        "private_key_file = RIGHT\n",
        {},
        ", ansible_ssh_private_key_file: WRONG",
        "unreachable",
    ),
    "[defaults] over [paramiko_connection]": (
        "private_key_file = WRONG\n[paramiko_connection]\nprivate_key_file = RIGHT\n",
        {},
        "",
        "unreachable",
    ),
    "ANSIBLE_PRIVATE_KEY_FILE over the file, relative to the current folder": (
        "private_key_file = WRONG\n",
        {"ANSIBLE_PRIVATE_KEY_FILE": "cwd/lab"},
        "",
        "ok",
    ),
    "[defaults] over ANSIBLE_PARAMIKO_PRIVATE_KEY_FILE": (
        "private_key_file = WRONG\n",
        {"ANSIBLE_PARAMIKO_PRIVATE_KEY_FILE": "RIGHT"},
        "",
        "unreachable",
    ),
}


@pytest.fixture(scope="module")
def lab_info(lab):
    info = lab.up(nodes=2, containers=2)
    differ.ansible_env.ensure_venv()
    differ.ansible_env.write_lab_plugin()
    return info


def tree(work: Path, info, case: str) -> tuple[Path, dict]:  # noqa: ANN001
    """The repository (ansible.cfg, keys/, hosts.yml, play.yml), and the variables."""
    lines, variables, host_vars, _ = CASES[case]
    wrong = work / "wrong"
    if not wrong.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True
        )
    names = {"RIGHT": str(info.identity), "WRONG": str(wrong)}
    for name, path in names.items():
        lines, host_vars = lines.replace(name, path), host_vars.replace(name, path)
        variables = {k: v.replace(name, path) for k, v in variables.items()}
    repo = work / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    (repo / "keys").mkdir(parents=True)
    shutil.copy(info.identity, repo / "keys/lab")
    cfg = BENCH_CFG.read_text() + "inventory = hosts.yml\nremote_user = root\n" + lines
    (repo / "ansible.cfg").write_text(cfg)
    address = info.node("node1").address
    (repo / "hosts.yml").write_text(
        f"all:\n  hosts:\n    c1: {{ansible_host: {address}, proxmox_vmid: 200{host_vars}}}\n"
    )
    (repo / "play.yml").write_text(PLAY)
    return repo, variables


def environment(work: Path, info, repo: Path, variables: dict) -> dict:  # noqa: ANN001
    env = differ.ansible_env.environment(work, info.known_hosts)  # HOME: known_hosts only
    env.pop("SSH_AUTH_SOCK", None)
    return env | {"ANSIBLE_CONFIG": str(repo / "ansible.cfg")} | variables


def reached(work: Path, info, case: str) -> dict:  # noqa: ANN001
    """Each tool's outcome from a folder beside the repository: 'ok' or 'unreachable'."""
    repo, variables = tree(work, info, case)
    cwd = work / "elsewhere"
    (cwd / "cwd").mkdir(parents=True, exist_ok=True)
    shutil.copy(info.identity, cwd / "cwd/lab")
    env = environment(work, info, repo, variables)
    ansible = [str(differ.ansible_env.VENV / "bin/ansible-playbook"), str(repo / "play.yml")]
    theirs = subprocess.run(ansible, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    ours_argv = [sys.executable, "-m", "pctfleet", "run", str(repo / "play.yml"), "--json"]
    ours_argv += ["--known-hosts", str(info.known_hosts), "--journal-dir", str(work / "runs")]
    ours = subprocess.run(ours_argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    ansible_said = "ok" if theirs.returncode == 0 else theirs.returncode
    if theirs.returncode == 4 and "UNREACHABLE" in theirs.stdout:
        ansible_said = "unreachable"
    pctfleet_said = {exitcodes.OK: "ok", exitcodes.UNREACHABLE: "unreachable"}.get(
        ours.returncode, ours.returncode
    )
    if ours.returncode == exitcodes.OK:
        (container,) = json.loads(ours.stdout)["containers"]
        assert [t["status"] for t in container["tasks"]] == ["changed"]
    return {"ansible": ansible_said, "pctfleet": pctfleet_said, "detail": ours.stderr[-600:]}


@pytest.mark.parametrize("case", CASES)
def test_the_key_ansible_cfg_names_logs_in_as_in_ansible(lab_info, tmp_path, case):
    outcome = reached(tmp_path, lab_info, case)
    assert outcome["ansible"] == CASES[case][-1], outcome
    assert outcome["pctfleet"] == outcome["ansible"], outcome
