"""The JSON of every result type: its fields, their order, rounding and nesting are a contract."""

from __future__ import annotations

import json
from pathlib import Path

from pctfleet.cuda.audit import ContainerAudit, DriftItem
from pctfleet.cuda.compile_probe import ProbeResult
from pctfleet.cuda.doctor import Diagnosis
from pctfleet.cuda.known_errors import Finding
from pctfleet.cuda.rules import RuleResult
from pctfleet.run.results import ContainerRun, TaskResult
from pctfleet.run.rollout import RolloutResult
from pctfleet.status import Status
from pctfleet.verify.runner import CheckResult, ContainerResult, VerifyResult


def test_a_container_run_keeps_its_field_order_and_rounds_its_times():
    task = TaskResult("t", "file", Status.CHANGED, duration=1.23456)
    run = ContainerRun("n1", 200, status=Status.CHANGED, duration=2.71828, tasks=[task])
    run.started_at, run.finished_at = 1700000000.123456, 1700000001.987654
    data = run.as_json()
    assert list(data) == [
        "node", "ctid", "name", "status", "message", "stats", "remote_calls", "remote_reruns",
        "local_calls",
        "duration", "started_at", "finished_at", "tasks",
    ]  # fmt: skip
    assert (data["duration"], data["started_at"], data["finished_at"]) == (
        2.718,
        1700000000.123,
        1700000001.988,
    )
    assert data["stats"] == {
        "ok": 1, "changed": 1, "failed": 0, "skipped": 0, "rescued": 0, "ignored": 0
    }  # fmt: skip
    assert data["tasks"] == [
        {
            "name": "t", "module": "file", "status": "changed", "changed": True, "msg": "",
            "diff": None, "duration": 1.235, "loc": "", "handler": False, "details": {},
        }
    ]  # fmt: skip


def test_nested_results_become_their_fields():
    diagnosis = Diagnosis(
        "n/1",
        rules=[RuleResult("r", False, "ev", "fix")],
        probe=ProbeResult(True, False, ["libcuda.so.1"], "log"),
        findings=[Finding("c", "r", "f", "l", 3)],
    )
    data = diagnosis.as_json()
    assert data["rules"] == [{"rule": "r", "ok": False, "evidence": "ev", "fix": "fix"}]
    assert data["probe"] == {
        "compile_ok": True, "link_ok": False, "needed": ["libcuda.so.1"], "log": "log"
    }  # fmt: skip
    assert data["findings"] == [{"cause": "c", "rule": "r", "fix": "f", "line": "l", "lineno": 3}]
    assert (data["cuda_home"], data["healthy"]) == (None, True)
    assert Diagnosis("n/2").as_json()["probe"] is None
    audit = ContainerAudit("n/1", "drift", items=[DriftItem("task", "w", "e", "a")]).as_json()
    assert list(audit) == ["container", "status", "message", "drift", "versions", "remote_calls"]
    assert audit["drift"] == [
        {"kind": "task", "what": "w", "expected": "e", "actual": "a", "fix": ""}
    ]


def test_verify_and_rollout_results_keep_their_fields():
    check = CheckResult("c1", "failed", "why", status="unreachable")
    row = ContainerResult("n/1", "failed", "m", [check], 1.23456789, remote_calls=2)
    result = VerifyResult([row], 3.14159)
    data = json.loads(json.dumps(result.as_json()))
    assert data["containers"] == [
        {
            "container": "n/1", "status": "failed", "message": "m", "seconds": 1.23456789,
            "remote_calls": 2, "checks": [{"id": "c1", "outcome": "failed", "message": "why"}],
        }
    ]  # fmt: skip
    assert data["summary"]["seconds"] == 3.14
    rollout = RolloutResult("r1", Path("/j"), ["a"], [], [], [["a"]], "").as_json()
    assert rollout == {
        "rollout_id": "r1", "journal": "/j", "batches": [["a"]], "done": ["a"], "failed": [],
        "untouched": [], "stopped": "", "completed": True, "outcome": "completed",
        "exit_code": 0,
    }  # fmt: skip
