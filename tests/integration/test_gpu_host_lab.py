"""The host side of GPU passthrough, on a lab of its own (127.0.16.x) whose nodes
have NVIDIA driver stand-ins at the real paths (lab/gpu.py): audit and doctor
read the node's kernel module, device nodes and CT configs, and each GPU
container's libraries and device nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet.lab import Lab
from pctfleet.lab.gpu import NodeDriver, set_ct_config, set_ct_userspace, set_node_driver

pytestmark = pytest.mark.lab

GOOD, OTHER = "580.159.04", "580.95.05"
DEVS = ["nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
PVE8 = [f"dev{i}: /dev/{d}" for i, d in enumerate(DEVS)]  # node1/200
RAW = [  # node2/200: the pre-PVE-8 way
    "lxc.cgroup2.devices.allow: c 195:* rwm",
    "lxc.cgroup2.devices.allow: c 238:* rwm",
    *[f"lxc.mount.entry: /dev/{d} dev/{d} none bind,optional,create=file" for d in DEVS],
]
PLAYBOOK = "- name: nothing\n  hosts: all\n  tasks:\n    - name: say\n      command: echo hi\n"
GPU_RULES = {"gpu-node-driver", "nvidia-uvm", "gpu-devices", "gpu-devices-open", "driver-match"}


@pytest.fixture(scope="module")
def glab(lab):  # the shared lab fixture checks the machine can run labs at all
    gpu_lab = Lab(Path("/var/lib/pctfleet-lab-gpu"), address_base="127.0.16")
    info = gpu_lab.up(nodes=2, containers=2)
    return gpu_lab, str(info.inventory)


def configure(lab: Lab, node2: NodeDriver | None = None, node1: NodeDriver | None = None,
              raw: list[str] = RAW) -> None:  # fmt: skip
    """Both nodes with driver GOOD, a GPU container (200) and a plain one (201) on each."""
    for index, driver, lines in ((1, node1, PVE8), (2, node2, raw)):
        node = lab._node(index)
        set_node_driver(node, driver or NodeDriver(GOOD))
        set_ct_config(node, lab._container(node, 200), lines)
        set_ct_config(node, lab._container(node, 201), [])
        set_ct_userspace(lab.lxcpath, f"pctfleet-n{index}-200", GOOD, DEVS)
        set_ct_userspace(lab.lxcpath, f"pctfleet-n{index}-201", None, [])


@pytest.fixture
def fleet(glab, tmp_path):
    lab, inventory = glab
    configure(lab)
    yield lab, inventory, tmp_path
    configure(lab)


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


def audit(inventory: str, tmp: Path) -> tuple[int, dict]:
    book = tmp / "book.yml"
    book.write_text(PLAYBOOK)
    proc = pctfleet("audit", "-i", inventory, "-p", str(book), "--json",
                    "--baseline-file", str(tmp / "baseline.json"))  # fmt: skip
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def gpu_drift(found: dict) -> dict[str, list[dict]]:
    return {
        c["container"]: [d for d in c["drift"] if d["kind"] == "gpu"]
        for c in found["containers"]
        if any(d["kind"] == "gpu" for d in c["drift"])
    }


def doctor_rules(inventory: str) -> dict[str, dict[str, dict]]:
    proc = pctfleet("doctor", "-i", inventory, "--json", "--no-probe")
    assert proc.stdout.strip(), proc.stderr
    return {
        c["container"]: {
            r["rule"]: r for r in c["rules"] if r["rule"] in GPU_RULES | {"driver-cuda"}
        }
        for c in json.loads(proc.stdout)["containers"]
    }


def failing(rules: dict[str, dict[str, dict]]) -> dict[str, set[str]]:
    bad = {ct: {r for r, v in got.items() if v["ok"] is False} for ct, got in rules.items()}
    return {ct: names for ct, names in bad.items() if names}


def test_healthy_passthrough_passes_and_shows_every_driver(fleet):
    lab, inventory, tmp = fleet
    code, found = audit(inventory, tmp)
    assert code == 0, found
    drivers = {n["node"]: n["gpu"]["driver"] for n in found["nodes"]}
    assert drivers == {"node1": GOOD, "node2": GOOD}
    node1 = next(n["gpu"] for n in found["nodes"] if n["node"] == "node1")
    assert node1["gpus"][0]["name"] == "NVIDIA H200" and "/dev/nvidia-uvm" in node1["devices"]
    columns = {c["container"]: (c["versions"]["driver"], c["versions"]["node driver"])
               for c in found["containers"]}  # fmt: skip
    assert columns == {"node1/200": (GOOD, GOOD), "node1/201": ("", GOOD),
                       "node2/200": (GOOD, GOOD), "node2/201": ("", GOOD)}  # fmt: skip
    listed = json.loads(pctfleet("inventory", "discover", "-i", inventory, "--json").stdout)
    assert [(n["node"], n["gpu"]["driver"]) for n in listed["nodes"]] == [
        ("node1", GOOD),
        ("node2", GOOD),
    ]
    rules = doctor_rules(inventory)
    assert {r for r, v in rules["node1/200"].items() if v["ok"]} == GPU_RULES
    assert rules["node2/200"]["gpu-devices"]["ok"] is True
    assert rules["node1/201"] == {} and rules["node2/201"] == {}
    text = pctfleet("audit", "-i", inventory, "-p", str(tmp / "book.yml"),
                    "--baseline-file", str(tmp / "baseline.json"))  # fmt: skip
    assert "node driver" in text.stdout and GOOD in text.stdout


def test_a_changed_node_driver_fails_that_nodes_gpu_containers_only(fleet):
    lab, inventory, tmp = fleet
    set_node_driver(lab._node(1), NodeDriver(OTHER))
    code, found = audit(inventory, tmp)
    assert code == 2
    drift = gpu_drift(found)
    assert list(drift) == ["node1/200"]
    (item,) = drift["node1/200"]
    assert item["what"] == "driver-match"
    assert GOOD in item["actual"] and OTHER in item["actual"] and item["fix"]
    assert failing(doctor_rules(inventory)) == {"node1/200": {"driver-match"}}


def test_a_missing_device_line_is_found_in_that_container_only(fleet):
    lab, inventory, tmp = fleet
    configure(lab, raw=[x for x in RAW if "/dev/nvidia-uvm dev" not in x])
    code, found = audit(inventory, tmp)
    assert code == 2
    drift = gpu_drift(found)
    assert list(drift) == ["node2/200"]
    (item,) = drift["node2/200"]
    assert item["what"] == "gpu-devices" and "/dev/nvidia-uvm" in item["actual"]
    assert "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm" in item["fix"]
    assert failing(doctor_rules(inventory)) == {"node2/200": {"gpu-devices"}}


def test_no_uvm_and_a_gpu_less_node(fleet):
    lab, inventory, tmp = fleet
    configure(lab, node2=NodeDriver(GOOD, uvm=False))
    assert failing(doctor_rules(inventory)) == {"node2/200": {"nvidia-uvm"}}
    set_node_driver(lab._node(2), NodeDriver(None))
    code, found = audit(inventory, tmp)
    assert code == 2
    assert {c: [d["what"] for d in items] for c, items in gpu_drift(found).items()} == {
        "node2/200": ["gpu-node-driver"]
    }
    assert next(n for n in found["nodes"] if n["node"] == "node2")["gpu"]["driver"] is None
