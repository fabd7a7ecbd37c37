"""Drift audit against the real lab: hand-made drift is found on exactly that container."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest
from suites import TRIXIE_CT, TRIXIE_SPARE, cuda_home, ensure_trixie, suite_params

pytestmark = pytest.mark.lab

PIP = "/opt/sglang/bin/python -m pip install -q --no-deps --disable-pip-version-check"

# hand-made drift (sh, with $CH set to the container's CUDA_HOME) -> the site.yml task
# that must report it
SEEDS = {
    "link": (
        'ln -sfn libcudart.so.13.0.0 "$CH/lib/libcudart.so"',
        "libcuda / libcudart link fixes",
    ),
    "nvvm": (f"{PIP} nvidia-nvvm==13.2.78", "matched CUDA toolchain"),
    "server": (
        "kill -TERM -$(cat /run/pctfleet/sglang.pid); sleep 1",
        "SGLang server with flashinfer attention, healthy",
    ),
    "header": (
        "echo '// edited by hand' >> \"$CH/include/cccl/cuda/std/type_traits\"",
        "CCCL overlay",
    ),
}


@dataclass(frozen=True)
class Fleet:
    """One suite's containers: which gets which seed, and the stopped-container case."""

    seeds: dict[str, str]  # seed -> container
    extra: str  # gets a pip package site.yml does not mention
    stopped: str  # stopped while the audit runs
    clean: str  # audited beside it, still clean

    @property
    def limit(self) -> str:
        return ",".join(dict.fromkeys(self.seeds.values()))

    def seeded(self, key: str) -> set[str]:
        """The tasks seeded on `key`."""
        return {SEEDS[seed][1] for seed, ct in self.seeds.items() if ct == key}


BOOKWORM = Fleet(
    {"link": "node1/200", "nvvm": "node1/201", "server": "node2/200", "header": "node2/201"},
    extra="node1/200",
    stopped="node1/201",
    clean="node1/200",
)
# One trixie + systemd container takes every seed; the trixie one with a minimal init,
# never provisioned, is the one stopped.
TRIXIE = Fleet(dict.fromkeys(SEEDS, TRIXIE_CT), TRIXIE_CT, TRIXIE_SPARE, TRIXIE_CT)


def pctfleet(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def inventory(lab):
    return str(lab.up(nodes=2, containers=2).inventory)


@pytest.fixture(scope="module", params=suite_params(BOOKWORM, TRIXIE))
def fleet(request, extra_ct) -> Fleet:
    if request.param is TRIXIE:
        ensure_trixie(extra_ct)
    return request.param


def audit(inventory: str, baseline, limit: str, *more: str) -> tuple[int, dict[str, dict]]:
    proc = pctfleet(
        "audit", "-i", inventory, "--limit", limit, "--json", "--baseline-file", str(baseline),
        *more,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    return proc.returncode, {c["container"]: c for c in json.loads(proc.stdout)["containers"]}


@pytest.fixture(scope="module")
def baseline(inventory, fleet, tmp_path_factory):
    """The suite's containers converged on site.yml, and their fingerprints recorded."""
    proc = pctfleet("provision", "-i", inventory, "--limit", fleet.limit)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = tmp_path_factory.mktemp("audit") / "baseline.json"
    code, _ = audit(inventory, path, fleet.limit, "--baseline")
    assert code == 0
    return path


@pytest.fixture(scope="module")
def ch(inventory, fleet, baseline) -> dict[str, str]:
    """Each container's CUDA_HOME (the venv's nvidia/cu13), read there once."""
    return {key: cuda_home(inventory, key) for key in dict.fromkeys(fleet.seeds.values())}


def test_converged_fleet_audits_clean_in_one_call_each(inventory, fleet, baseline):
    code, found = audit(inventory, baseline, fleet.limit)
    assert code == 0
    assert {c["status"] for c in found.values()} == {"clean"}
    assert {c["remote_calls"] for c in found.values()} == {1}


def test_hand_made_drift_is_reported_where_it_happened_then_repaired(
    inventory, fleet, baseline, ch
):
    for seed, key in fleet.seeds.items():
        script = f"CH={ch[key]}; {SEEDS[seed][0]}"
        done = pctfleet("exec", "-i", inventory, "--limit", key, "--", "sh", "-c", script)
        assert done.returncode == 0, (key, done.stderr)
    extra = pctfleet(
        "exec", "-i", inventory, "--limit", fleet.extra, "--", "sh", "-c", f"{PIP} tomli-w==1.0.0"
    )
    assert extra.returncode == 0

    code, found = audit(inventory, baseline, fleet.limit)
    assert code == 2
    for key in found:
        tasks = {i["what"] for i in found[key]["drift"] if i["kind"] == "task"}
        assert fleet.seeded(key) <= tasks, (key, tasks)
        others = set(SEEDS[seed][1] for seed in SEEDS) - fleet.seeded(key)
        assert not others & tasks, (key, tasks)
    linked = fleet.seeds["link"]
    link = next(i for i in found[linked]["drift"] if i["what"] == SEEDS["link"][1])
    assert "libcudart.so.13.0.0" in link["actual"] and "libcudart.so.13" in link["expected"]
    extras = [i for i in found[fleet.extra]["drift"] if i["kind"] == "extra-package"]
    assert [(i["what"], i["actual"]) for i in extras] == [("pip.tomli-w", "1.0.0")]
    assert found[fleet.seeds["nvvm"]]["versions"]["nvvm"] == "13.2.78"

    assert pctfleet("provision", "-i", inventory, "--limit", fleet.limit).returncode == 0
    code, found = audit(inventory, baseline, fleet.limit)
    # provision enforces what site.yml declares; a package it does not mention is
    # reported until the operator removes it or accepts it into the baseline.
    assert code == 2
    assert [i["what"] for c in found.values() for i in c["drift"]] == ["pip.tomli-w"]
    pctfleet(
        "exec",
        "-i",
        inventory,
        "--limit",
        fleet.extra,
        "--",
        "/opt/sglang/bin/python",
        "-m",
        "pip",
        "uninstall",
        "-y",
        "-q",
        "tomli-w",
    )
    code, found = audit(inventory, baseline, fleet.limit)
    assert code == 0, {k: c["drift"] for k, c in found.items() if c["drift"]}


def test_stopped_container_is_never_clean(lab, inventory, fleet, baseline):
    node, ctid = fleet.stopped.split("/")
    lab.stop_container(node, int(ctid))
    try:
        code, found = audit(inventory, baseline, f"{fleet.limit},{fleet.stopped}")
    finally:
        lab.start_container(node, int(ctid))
    assert code == 1, {k: (c["status"], c["message"], c["drift"]) for k, c in found.items()}
    assert found[fleet.stopped]["status"] == "ct-stopped"
    assert found[fleet.clean]["status"] == "clean"
