"""Containers read from the lab's nodes: discovery inventories and fleet drift in audit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pctfleet.lab.nodes import pve_config

pytestmark = pytest.mark.lab

HAND_MADE = 290  # a container made on node2 by hand, outside any inventory
PLAYBOOK = """\
- name: hello
  hosts: all
  tasks:
    - name: say where
      command: "echo hello from {{ inventory_hostname }}"
"""


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def lab_doc(lab) -> dict:
    return yaml.safe_load(Path(lab.up(nodes=2, containers=2).inventory).read_text())


def write_inventory(tmp_path: Path, lab_doc: dict, node2: dict) -> str:
    doc = {k: v for k, v in lab_doc.items() if k in ("defaults", "vars")}
    doc["nodes"] = {"node2": {"address": lab_doc["nodes"]["node2"]["address"], **node2}}
    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def playbook(tmp_path: Path) -> str:
    path = tmp_path / "hello.yml"
    path.write_text(PLAYBOOK)
    return str(path)


@pytest.fixture
def hand_made(lab):
    """A CT config written on node2 the way `pct create` leaves one, removed afterwards."""
    node = lab._node(2)
    conf = node.pve / "nodes" / node.name / "lxc" / f"{HAND_MADE}.conf"
    conf.write_text(pve_config(node, lab._container(node, HAND_MADE)) + "tags: gpu;adhoc\n")
    yield HAND_MADE
    conf.unlink()


def audit(inventory: str, playbook: str, tmp_path: Path) -> tuple[int, dict]:
    proc = pctfleet(
        "audit", "-i", inventory, "-p", playbook, "--json",
        "--baseline-file", str(tmp_path / "baseline.json"),
    )  # fmt: skip
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_hand_made_container_is_unmanaged(lab_doc, hand_made, playbook, tmp_path):
    inv = write_inventory(tmp_path, lab_doc, {"containers": [200, 201]})
    code, found = audit(inv, playbook, tmp_path)
    assert code == 2
    assert {(f["node"], f["ctid"], f["kind"]) for f in found["fleet"]} == {
        ("node2", hand_made, "unmanaged")
    }
    listed = pctfleet("inventory", "discover", "-i", inv, "--tag", "gpu", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["containers"]
    assert (row["ctid"], row["status"], row["tags"]) == (hand_made, "stopped", ["gpu", "adhoc"])


def test_listed_container_the_node_lacks_is_missing(lab_doc, playbook, tmp_path):
    inv = write_inventory(tmp_path, lab_doc, {"containers": [200, 201, 299]})
    code, found = audit(inv, playbook, tmp_path)
    assert code == 2
    assert [(f["node"], f["ctid"], f["kind"]) for f in found["fleet"]] == [
        ("node2", 299, "missing")
    ]
    assert sorted(c["container"] for c in found["containers"]) == ["node2/200", "node2/201"]


def test_discovery_inventory_runs_a_playbook(lab_doc, hand_made, playbook, tmp_path):
    inv = write_inventory(tmp_path, lab_doc, {"discover": {"status": "running"}})
    proc = pctfleet("run", "-i", inv, playbook, "--limit", "n2-ct201,node2/200", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    keys = {(c["node"], c["ctid"]) for c in rows["containers"]}
    assert keys == {("node2", 200), ("node2", 201)}  # 290 is stopped: not discovered


def test_a_node_that_cannot_be_read_is_never_empty(lab_doc, playbook, tmp_path):
    inv = write_inventory(tmp_path, lab_doc, {"discover": {}, "port": 1})
    proc = pctfleet("run", "-i", inv, playbook)
    assert proc.returncode == 3
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: cannot discover containers: node node2 (127.0.10.2):")


def test_a_ct_config_changed_since_the_baseline_is_drift_in_that_container(
    lab, lab_doc, playbook, tmp_path
):
    inv = write_inventory(tmp_path, lab_doc, {"containers": [200, 201]})
    recorded = pctfleet(
        "audit", "-i", inv, "-p", playbook, "--baseline",
        "--baseline-file", str(tmp_path / "baseline.json"),
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    conf = lab._node(2).pve / "nodes" / "node2" / "lxc" / "201.conf"
    before = conf.read_text()
    conf.write_text(before.replace("memory: 2048", "memory: 4096"))
    try:
        code, found = audit(inv, playbook, tmp_path)
    finally:
        conf.write_text(before)
    assert code == 2
    drifted = {
        c["container"]: [(d["kind"], d["what"], d["expected"], d["actual"]) for d in c["drift"]]
        for c in found["containers"]
        if c["drift"]
    }
    assert drifted == {"node2/201": [("ct-config", "memory", "2048", "4096")]}
    assert audit(inv, playbook, tmp_path)[0] == 0  # restored: clean again
