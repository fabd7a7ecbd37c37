"""Which variable wins, through ansible-playbook and pctfleet on the same files:
group_vars/ and host_vars/ beside the inventory and beside the playbook, the
inventory file's own vars, ansible_group_priority, a vault-encrypted vars file, a
role's defaults, and the play's vars_files named by a host variable (tests/varfiles).

The node's address, SSH user and key come from inv/group_vars/all.yml and the
container's id from inv/host_vars/h1.yml, so both tools also find the container
through those files. Ansible runs on node1/200, pctfleet on node2/200, each twice;
the values each left in the container, the task statuses and the exit codes must be
the same. Ansible's outcome is kept by its inputs (tests/integration/differ.py).
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import differ
import pytest
import yaml

from pctfleet.lab import Lab

pytestmark = pytest.mark.lab

TESTS = Path(__file__).resolve().parents[1]
TREE = TESTS / "varfiles"
VAULT_FILE = TESTS / "unit/vault_fixtures/vars11.yml"  # password hunter2
DIR = "/tmp/pctfleet-varfiles"
CTID = 200
CALL = 1  # bump when how Ansible is called here changes


def _tree(lab: Lab, work: Path, node: str) -> Path:
    """tests/varfiles for one tool, connected to `node` through its group_vars."""
    root = work / node
    shutil.copytree(TREE, root)
    (root / "play/group_vars/gpu").mkdir()
    shutil.copy(VAULT_FILE, root / "play/group_vars/gpu/vault.yml")
    connection = {
        "ansible_host": lab.info.node(node).address,
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(lab.info.identity),
    }
    with (root / "inv/group_vars/all.yml").open("a") as out:
        out.write(yaml.safe_dump(connection))
    return root


def _side(run, lab: Lab, work: Path, node: str) -> dict:  # noqa: ANN001
    root = _tree(lab, work, node)
    differ.in_container(lab, node, CTID, f"rm -rf {DIR} && mkdir -p {DIR}")
    argv = (root / "inv/hosts.yml", root / "play/site.yml")
    password = ("--vault-password-file", str(work / "vault-pass"))
    runs = [run(lab, root, *argv, *password) for _ in range(2)]
    return {"runs": runs, "values": differ.in_container(lab, node, CTID, f"cat {DIR}/values")}


def _inputs() -> list:
    files = sorted(p for p in TREE.rglob("*") if p.is_file())
    tree = [[str(p.relative_to(TREE)), p.read_text()] for p in files]
    return [CALL, DIR, CTID, tree, VAULT_FILE.read_text()]


@pytest.fixture(scope="module")
def outcomes(lab, tmp_path_factory) -> tuple[dict, dict]:
    lab.up(nodes=2, containers=2)
    differ.ansible_env.ensure_venv()
    differ.ansible_env.write_lab_plugin()
    work = tmp_path_factory.mktemp("varfiles")
    (work / "vault-pass").write_text("hunter2\n")
    cached = differ.cache_path("varfiles", _inputs())
    try:
        if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
            theirs = json.loads(cached.read_text())
            ours = _side(differ.run_pctfleet, lab, work, "node2")
        else:
            with ThreadPoolExecutor(max_workers=2) as pool:
                ansible = pool.submit(_side, differ.run_ansible, lab, work, "node1")
                mine = pool.submit(_side, differ.run_pctfleet, lab, work, "node2")
                theirs, ours = ansible.result(), mine.result()
            differ.keep(cached, theirs)
        yield theirs, ours
    finally:
        for node in ("node1", "node2"):
            differ.in_container(lab, node, CTID, f"rm -rf {DIR}")


def test_the_same_values_win(outcomes):
    theirs, ours = outcomes
    assert "p1=f-all\n" in theirs["values"]  # Ansible's run did render the tree
    # vars_files named by a host variable; an undefined name skips its whole entry
    assert "vf1=eu-west-file\nvf2=from-site\nvf3=default\n" in theirs["values"]
    assert ours["values"] == theirs["values"]


def test_the_same_task_statuses_and_exit_codes(outcomes):
    theirs, ours = outcomes
    first, second = ours["runs"]
    assert first["tasks"]["h1"][-1] == ["the values that won", "changed"]
    assert second["tasks"]["h1"][-1] == ["the values that won", "ok"]
    assert ours["runs"] == theirs["runs"]
