"""Rolling out across a 3x3 lab: batches, thresholds, per-node limits, gate, resume."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from pctfleet.lab import Lab

pytestmark = pytest.mark.lab

PLAYBOOKS = Path(__file__).parent / "playbooks"
BOOK = str(PLAYBOOKS / "rollout.yml")
PLAIN = str(PLAYBOOKS / "plain.yml")  # deploys no part of the GPU stack
BY_NODE = ("--serial", "3", "--order", "node")
GATE = ["--gate-tests", str(PLAYBOOKS / "gate_checks.py"), "--gate-checks", "rollout_health"]


@pytest.fixture(scope="module")
def rlab(lab):  # the shared lab fixture checks the machine can run labs at all
    rollout_lab = Lab(Path("/var/lib/pctfleet-lab-rollout"), address_base="127.0.14")
    info = rollout_lab.up(nodes=3, containers=3)
    return rollout_lab, str(info.inventory)


def pctfleet(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=timeout
    )


def rollout(inventory: str, journal: Path, *args: str) -> tuple[int, list[dict]]:
    where = [] if "--resume" in args else ["-i", inventory]  # a resume reads the journal's
    proc = pctfleet("rollout", *where, "--json", "--journal-dir", str(journal), *args)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert events, proc.stderr
    return proc.returncode, events


def summary(events: list[dict]) -> dict:
    return next(e for e in events if e["kind"] == "summary")


def markers(inventory: str, marker: str) -> dict[str, bool]:
    proc = pctfleet("exec", "-i", inventory, "--json", "--", "test", "-e", marker)
    return {r["container"]: r["exit_code"] == 0 for r in json.loads(proc.stdout)["results"]}


def test_serial_gives_ansible_batches(rlab, tmp_path):
    _, inventory = rlab
    code, events = rollout(
        inventory,
        tmp_path,
        BOOK,
        "--serial",
        "1,50%",
        "--no-gate",
        "-e",
        "marker=/tmp/rollout-serial",
    )
    assert code == 0
    plan = next(e for e in events if e["kind"] == "rollout-plan")
    assert [len(b) for b in plan["batches"]] == [1, 4, 4]
    result = summary(events)
    assert len(result["done"]) == 9 and result["failed"] == [] and result["untouched"] == []
    journal = Path(result["journal"]).read_text().splitlines()
    assert [json.loads(r)["kind"] for r in journal].count("batch-start") == 3


def test_stopped_container_stops_the_rollout_then_resume_completes(rlab, tmp_path):
    lab, inventory = rlab
    marker = "/tmp/rollout-resume"
    pctfleet("exec", "-i", inventory, "--", "rm", "-f", marker)
    lab.stop_container("node2", 201)
    try:
        code, events = rollout(
            inventory,
            tmp_path,
            BOOK,
            "--serial",
            "3",
            "--order",
            "node",
            *GATE,
            "-e",
            f"marker={marker}",
        )
    finally:
        lab.start_container("node2", 201)
    assert code == 2  # the defaults: one failed container stops the rollout after its batch
    result = summary(events)
    assert (result["outcome"], result["exit_code"], result["completed"]) == ("stopped", 2, False)
    assert result["failed"] == ["node2/201"]
    assert sorted(result["untouched"]) == ["node3/200", "node3/201", "node3/202"]
    inside = markers(inventory, marker)
    assert not any(inside[key] for key in result["untouched"])
    assert all(inside[f"node1/{ct}"] for ct in (200, 201, 202))

    code, events = rollout(inventory, tmp_path, "--resume", result["rollout_id"])
    assert code == 0, events[-1]
    resumed = summary(events)
    assert sorted(resumed["done"]) == sorted(inside)
    check = next(e for e in events if e["kind"] == "resume-check")
    assert set(check["healthy"]) >= {"node1/200", "node1/201", "node1/202"}
    assert all(markers(inventory, marker).values())
    audit = pctfleet(
        "audit",
        "-i",
        inventory,
        "--playbook",
        BOOK,
        "-e",
        f"marker={marker}",
        "--baseline-file",
        str(tmp_path / "none.json"),
    )
    assert audit.returncode == 0, audit.stdout[-2000:]


def in_containers(inventory: str, *argv: str) -> dict[str, str]:
    proc = pctfleet("exec", "-i", inventory, "--json", "--", *argv)
    return {r["container"]: r["stdout"] for r in json.loads(proc.stdout)["results"]}


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_per_node_limit_never_overlaps_a_node(rlab, tmp_path):
    _, inventory = rlab
    log = "/tmp/rollout-per-node.log"
    in_containers(inventory, "rm", "-f", log)
    started = time.time()
    code, events = rollout(
        inventory,
        tmp_path,
        str(PLAYBOOKS / "timed.yml"),
        "--serial",
        "100%",
        "--per-node",
        "1",
        "--no-gate",
        "-e",
        f"log={log}",
    )
    assert code == 0, events[-1]
    # What each container itself recorded: when its change began and ended.
    spans = defaultdict(list)
    for key, text in in_containers(inventory, "cat", log).items():
        begin, end = (float(line.split()[1]) for line in text.splitlines())
        spans[key.split("/")[0]].append((begin, end))
    assert sorted(spans) == ["node1", "node2", "node3"]
    assert all(len(intervals) == 3 for intervals in spans.values())
    for node, intervals in spans.items():
        intervals.sort()
        for before, after in zip(intervals, intervals[1:], strict=False):
            assert not overlaps(before, after), f"{node}: two containers in flight at once"
    # The limit is per node: the nodes still ran side by side.
    assert any(overlaps(a, b) for a in spans["node1"] for b in spans["node2"] + spans["node3"])
    runs = [e for e in events if e["kind"] == "container"]
    assert len(runs) == 9
    for run in runs:
        assert started <= run["started_at"] <= run["finished_at"] <= time.time(), run


def test_failed_health_gate_stops_after_that_batch(rlab, tmp_path):
    _, inventory = rlab
    marker = "/tmp/rollout-gate"
    pctfleet("exec", "-i", inventory, "--", "rm", "-f", marker, "/tmp/rollout-unhealthy")
    pctfleet(
        "exec", "-i", inventory, "--limit", "node1/201", "--", "touch", "/tmp/rollout-unhealthy"
    )
    try:
        code, events = rollout(
            inventory,
            tmp_path,
            BOOK,
            "--serial",
            "3",
            "--order",
            "node",
            *GATE,
            "-e",
            f"marker={marker}",
        )
    finally:
        pctfleet("exec", "-i", inventory, "--", "rm", "-f", "/tmp/rollout-unhealthy")
    assert code == 2
    gate = next(e for e in events if e["kind"] == "gate")
    assert gate["batch"] == 1 and not gate["passed"]
    assert not gate["results"]["node1/201"]["passed"]
    result = summary(events)
    assert "health gate failed after batch 1" in result["stopped"]
    assert len(result["untouched"]) == 6
    inside = markers(inventory, marker)
    assert not any(inside[key] for key in result["untouched"])


def test_default_gate_checks_what_the_playbook_manages(rlab, tmp_path):
    _, inventory = rlab
    in_containers(inventory, "rm", "-rf", "/tmp/rollout-plain")
    code, events = rollout(inventory, tmp_path, PLAIN, *BY_NODE)
    gates = [e for e in events if e["kind"] == "gate"]
    assert code == 0, gates
    assert [g["passed"] for g in gates] == [True, True, True]
    assert len(summary(events)["done"]) == 9


def test_default_gate_fails_a_container_that_is_not_converged(rlab, tmp_path):
    _, inventory = rlab
    code, events = rollout(inventory, tmp_path, PLAIN, *BY_NODE, "-e", "fight=node1/201")
    assert code == 2
    gate = next(e for e in events if e["kind"] == "gate")
    assert gate["batch"] == 1 and not gate["passed"]
    verdict = gate["results"]["node1/201"]
    assert not verdict["passed"] and "not converged" in verdict["message"], verdict
    assert "'settings'" in verdict["message"]
    assert gate["results"]["node1/200"]["passed"], gate["results"]
    result = summary(events)
    assert "health gate failed after batch 1" in result["stopped"]
    assert len(result["untouched"]) == 6
