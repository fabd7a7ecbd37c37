"""Drift audit against the real lab: hand-made drift is found on exactly that container."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.lab

CH = "/opt/sglang/lib/python3.11/site-packages/nvidia/cu13"
PIP = "/opt/sglang/bin/python -m pip install -q --no-deps --disable-pip-version-check"
HEADER = f"{CH}/include/cccl/cuda/std/type_traits"

# container -> (hand-made drift, the site.yml task that must report it)
SEEDS = {
    "node1/200": (
        f"ln -sfn libcudart.so.13.0.0 {CH}/lib/libcudart.so",
        "libcuda / libcudart link fixes",
    ),
    "node1/201": (f"{PIP} nvidia-nvvm==13.2.78", "matched CUDA toolchain"),
    "node2/200": (
        "kill -TERM -$(cat /run/pctfleet/sglang.pid); sleep 1",
        "SGLang server with flashinfer attention, healthy",
    ),
    "node2/201": (f"echo '// edited by hand' >> {HEADER}", "CCCL overlay"),
}


def pctfleet(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def inventory(lab):
    return str(lab.up(nodes=2, containers=2).inventory)


def audit(inventory: str, baseline, *more: str) -> tuple[int, dict[str, dict]]:
    proc = pctfleet("audit", "-i", inventory, "--json", "--baseline-file", str(baseline), *more)
    assert proc.stdout, proc.stderr
    return proc.returncode, {c["container"]: c for c in json.loads(proc.stdout)["containers"]}


@pytest.fixture(scope="module")
def baseline(inventory, tmp_path_factory):
    """Every lab container converged on site.yml, and its fingerprint recorded."""
    proc = pctfleet("provision", "-i", inventory)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = tmp_path_factory.mktemp("audit") / "baseline.json"
    code, _ = audit(inventory, path, "--baseline")
    assert code == 0
    return path


def test_converged_fleet_audits_clean_in_one_call_each(inventory, baseline):
    code, found = audit(inventory, baseline)
    assert code == 0
    assert {c["status"] for c in found.values()} == {"clean"}
    assert {c["remote_calls"] for c in found.values()} == {1}


def test_hand_made_drift_is_reported_where_it_happened_then_repaired(inventory, baseline):
    for key, (script, _) in SEEDS.items():
        done = pctfleet("exec", "-i", inventory, "--limit", key, "--", "sh", "-c", script)
        assert done.returncode == 0, (key, done.stderr)
    extra = pctfleet(
        "exec", "-i", inventory, "--limit", "node1/200", "--", "sh", "-c", f"{PIP} tomli-w==1.0.0"
    )
    assert extra.returncode == 0

    code, found = audit(inventory, baseline)
    assert code == 2
    for key, (_, task) in SEEDS.items():
        tasks = {i["what"] for i in found[key]["drift"] if i["kind"] == "task"}
        assert task in tasks, (key, tasks)
        others = [k for k in SEEDS if k != key]
        assert all(task not in {i["what"] for i in found[k]["drift"]} for k in others)
    link = next(i for i in found["node1/200"]["drift"] if i["what"] == SEEDS["node1/200"][1])
    assert "libcudart.so.13.0.0" in link["actual"] and "libcudart.so.13" in link["expected"]
    extras = [i for i in found["node1/200"]["drift"] if i["kind"] == "extra-package"]
    assert [(i["what"], i["actual"]) for i in extras] == [("pip.tomli-w", "1.0.0")]
    assert found["node1/201"]["versions"]["nvvm"] == "13.2.78"

    assert pctfleet("provision", "-i", inventory).returncode == 0
    code, found = audit(inventory, baseline)
    # provision enforces what site.yml declares; a package it does not mention is
    # reported until the operator removes it or accepts it into the baseline.
    assert code == 2
    assert [i["what"] for c in found.values() for i in c["drift"]] == ["pip.tomli-w"]
    pctfleet(
        "exec",
        "-i",
        inventory,
        "--limit",
        "node1/200",
        "--",
        "/opt/sglang/bin/python",
        "-m",
        "pip",
        "uninstall",
        "-y",
        "-q",
        "tomli-w",
    )
    code, found = audit(inventory, baseline)
    assert code == 0, {k: c["drift"] for k, c in found.items() if c["drift"]}


def test_stopped_container_is_never_clean(lab, inventory, baseline):
    lab.stop_container("node1", 201)
    try:
        code, found = audit(inventory, baseline)
    finally:
        lab.start_container("node1", 201)
    assert code == 1, {k: (c["status"], c["message"], c["drift"]) for k, c in found.items()}
    assert found["node1/201"]["status"] == "ct-stopped"
    assert found["node1/200"]["status"] == "clean"
