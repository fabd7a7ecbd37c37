"""Strings from playbooks, inventories and containers print as written, never as markup.

Each printing place gets every hostile string; the output must hold it literally
(terminal control codes as a visible `\\x1b`), and printing must not raise.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from pctfleet.cli import auditview, doctorview, report
from pctfleet.cli.rollout import _finish, _printer
from pctfleet.cuda.audit import ContainerAudit, DriftItem
from pctfleet.cuda.compile_probe import ProbeResult
from pctfleet.cuda.doctor import Diagnosis
from pctfleet.cuda.facts import ToolchainFacts
from pctfleet.cuda.known_errors import Finding
from pctfleet.cuda.rules import RuleResult
from pctfleet.lab import cli as labcli
from pctfleet.lab.model import ContainerStatus, LabError, LabStatus, NodeStatus
from pctfleet.run.results import ContainerRun, TaskResult
from pctfleet.run.rollout import RolloutResult
from pctfleet.textout import line, visible
from pctfleet.verify.runner import CheckResult, ContainerResult, VerifyResult
from pctfleet.verify.runner import render as verify_render

HOSTILE = [
    "[/bold]",
    "[red]x[/red]",
    "[link=file:///etc/passwd]y[/link]",
    "[",
    "\x1b[31m",
]
ids = ["close-tag", "style", "link", "lone-bracket", "ansi"]
hostile = pytest.mark.parametrize("bad", HOSTILE, ids=ids)


def console() -> Console:
    return Console(file=io.StringIO(), width=400, color_system=None, soft_wrap=True)


def printed(con: Console) -> str:
    return con.file.getvalue()


def assert_literal(out: str, bad: str) -> None:
    """The string is there as written; a control code is there only as a visible escape."""
    assert visible(bad) in out, out
    assert "\x1b" not in out, repr(out)


def test_visible_writes_control_codes_out_and_keeps_layout():
    assert visible("a\x1b[31mb\x07\tc\nd") == "a\\x1b[31mb\\x07\tc\nd"
    assert visible("\x9b2J") == "\\x9b2J"  # the one-byte CSI as well


def test_line_styles_only_our_pairs():
    text = line(("ok", "green"), " [red]x[/red]")
    assert text.plain == "ok [red]x[/red]"
    assert [str(span.style) for span in text.spans] == ["green"]


@hostile
def test_live_task_line_shows_task_name_container_and_stderr(bad):
    con = console()
    live = report.LiveReport(con)
    run = ContainerRun(node=f"node{bad}", ctid=101)
    live.task(run, TaskResult(name=f"task {bad}", module="command", status="failed", msg=bad))
    out = printed(con)
    assert_literal(out, f"node{bad}/101")
    assert_literal(out, f"task {bad}")
    assert out.count(visible(bad)) == 3


@hostile
def test_loop_items_show_their_label_and_message_as_written(bad):
    con = console()
    items = [
        {"item": f"a{bad}", "status": "changed", "changed": True, "msg": ""},
        {"item": f"b{bad}", "status": "failed", "changed": False, "msg": f"err {bad}"},
        {"item": f"c{bad}", "status": "skipped", "changed": False, "msg": ""},
    ]
    result = TaskResult("t", "command", "failed", msg="One or more items failed", items=items)
    report.LiveReport(con).task(ContainerRun("pve1", 101), result)
    out = printed(con)
    assert_literal(out, f"(item=a{bad})")
    assert_literal(out, f"(item=b{bad})  err {bad}")
    assert f"c{visible(bad)}" not in out  # a skipped item shows only with -v


@hostile
def test_a_debug_message_shows_whole_without_v_as_ansible_shows_it(bad):
    con = console()
    msg = f"first {bad}\nsecond line, " + "long " * 60
    report.LiveReport(con).task(ContainerRun("pve1", 101), TaskResult("d", "debug", "ok", msg))
    out = printed(con)
    assert_literal(out, f"    first {bad}")
    assert "    second line, " + "long " * 59 + "long" in out  # not cut to one line


def test_only_a_debug_message_shows_without_v():
    con = console()
    live = report.LiveReport(con)
    live.task(ContainerRun("pve1", 101), TaskResult("c", "command", "changed", "ran it"))
    items = [{"item": "a", "status": "ok", "changed": False, "msg": "item says a"}]
    looped = TaskResult("d", "debug", "ok", "All items completed", items=items)
    live.task(ContainerRun("pve1", 101), looped)
    out = printed(con)
    assert "ran it" not in out  # a module's message is for -v
    assert "(item=a)  item says a" in out
    assert "All items completed" not in out  # a loop says it through its items


@hostile
def test_a_task_warning_shows_under_its_line_as_written(bad):
    con = console()
    result = TaskResult("t", "debug", "ok", details={"warnings": [f"lookup failed: {bad}"]})
    report.LiveReport(con).task(ContainerRun("pve1", 101), result)
    assert_literal(printed(con), f"  warning: lookup failed: {bad}")


@hostile
def test_diff_shows_before_and_after_as_written(bad):
    con = console()
    live = report.LiveReport(con, show_diff=True)
    diff = {"path": f"/etc/{bad}", "before": f"old {bad}\n", "after": f"new {bad}\n"}
    live.task(ContainerRun("pve1", 101), TaskResult("t", "copy", "changed", diff=diff))
    out = printed(con)
    assert_literal(out, f"-old {bad}")
    assert_literal(out, f"+new {bad}")
    assert_literal(out, f"before: /etc/{bad}")


@hostile
def test_recap_shows_container_and_message(bad):
    con = console()
    run = ContainerRun(node=f"n{bad}", ctid=7, status="failed", message=f"stderr: {bad}")
    report.recap(con, [run], f"run{bad}")
    out = printed(con)
    assert_literal(out, f"n{bad}/7")
    assert_literal(out, f"stderr: {bad}")
    assert_literal(out, f"run{bad}")


@hostile
def test_audit_shows_evidence_and_matrix_cells(bad):
    con = console()
    audit = ContainerAudit(
        f"n{bad}/1",
        "drift",
        message=f"m {bad}",
        items=[DriftItem("task", f"what {bad}", f"exp {bad}", f"act {bad}")],
        fingerprint={"nvcc": f"12{bad}", "driver": "570"},
    )
    other = ContainerAudit("n/2", "unreachable", message=bad)
    auditview.render(con, [audit, other])
    out = printed(con)
    for expected in (f"n{bad}/1", f"m {bad}", f"what {bad}", f"exp {bad}", f"act {bad}"):
        assert_literal(out, expected)
    assert_literal(out, f"12{bad}")


@hostile
def test_doctor_shows_rules_evidence_components_and_findings(bad):
    con = console()
    facts = ToolchainFacts(cuda_home=f"/opt/{bad}", nvcc_version=f"12.8{bad}")
    diagnosis = Diagnosis(
        f"n{bad}/1",
        status="problem",
        arch="sm_120",
        facts=facts,
        rules=[RuleResult(f"rule {bad}", False, f"evidence {bad}", f"fix {bad}")],
        probe=ProbeResult(compile_ok=False, link_ok=False),
        findings=[Finding(f"cause {bad}", "r", f"fix2 {bad}", f"log {bad}", 3)],
        verdict=f"verdict {bad}",
    )
    gone = Diagnosis(f"m{bad}/2", status="unreachable", message=f"ssh {bad}")
    doctorview.render(con, [diagnosis, gone])
    out = printed(con)
    for expected in (
        f"/opt/{bad}",
        f"12.8{bad}",
        f"rule {bad}",
        f"evidence {bad}",
        f"fix {bad}",
        f"cause {bad}",
        f"log {bad}",
        f"fix2 {bad}",
        f"verdict {bad}",
        f"ssh {bad}",
    ):
        assert_literal(out, expected)


@hostile
def test_verify_shows_check_ids_and_evidence(bad):
    con = console()
    checks = [CheckResult(f"test_x[{bad}]", "failed", f"assert {bad}")]
    result = VerifyResult([ContainerResult(f"n{bad}/1", "failed", "1 of 1", checks)], 1.0)
    verify_render(con, result)
    out = printed(con)
    assert_literal(out, f"test_x[{bad}]")
    assert_literal(out, f"assert {bad}")
    assert_literal(out, f"n{bad}/1")


@hostile
def test_lab_status_and_error_show_names_as_written(bad, monkeypatch):
    con = console()
    monkeypatch.setattr(labcli, "out", con)
    monkeypatch.setattr(labcli, "err", con)
    node = NodeStatus(f"pve{bad}", "127.0.10.1", 22, True, 1, None)
    node.containers = [ContainerStatus(101, "x", "h", f"odd{bad}")]
    labcli._print_status(LabStatus(Path(f"/tmp/{bad}"), True, [node]))

    def boom():
        raise LabError(f"lxc-start: {bad}")

    with pytest.raises(labcli.typer.Exit):
        labcli._guard(boom)
    out = printed(con)
    for expected in (f"pve{bad}", f"odd{bad}", f"lxc-start: {bad}"):
        assert_literal(out, expected)


def rollout_events(bad: str) -> list[dict]:
    key = f"n{bad}/1"
    return [
        {"kind": "rollout", "rollout_id": "r1", "journal": f"/j/{bad}.jsonl"},
        {"kind": "rollout-plan", "batches": [[key, "n/2"], ["n/3"], ["n/4"]], "done": []},
        {"kind": "batch-start", "batch": 1, "of": 3, "containers": [key, "n/2"]},
        {"kind": "task", "container": key, "name": f"task {bad}", "status": "failed"},
        {"kind": "container", "container": key, "status": "failed", "message": f"err {bad}"},
        {
            "kind": "gate",
            "batch": 1,
            "passed": False,
            "results": {"n/2": {"passed": False, "message": f"check {bad}"}},
        },
        {"kind": "rollout-stop", "batch": 1, "reason": f"batch 1: {key}, n/2 failed"},
        {"kind": "resume-check", "done": [key, "n/2"], "healthy": ["n/2"]},
        {"kind": "rollout-end", "done": [], "failed": [key], "untouched": [], "stopped": "x"},
    ]


@hostile
def test_rollout_events_show_foreign_strings_as_written(bad, capsys):
    show = _printer(as_json=False)
    for event in rollout_events(bad):
        show(event)
    err = capsys.readouterr().err
    for expected in (f"task {bad}", f"err {bad}", f"check {bad}", f"/j/{bad}.jsonl"):
        assert_literal(err, expected)
    assert_literal(err, f"n{bad}/1")


@hostile
def test_rollout_summary_shows_reason_and_keys(bad, capsys):
    result = RolloutResult("r1", Path("/j"), failed=[f"n{bad}/1"], stopped=f"stop {bad}")
    _finish(result, as_json=False)
    out = capsys.readouterr().out
    assert_literal(out, f"stop {bad}")
    assert_literal(out, f"n{bad}/1")


def test_rollout_events_read_as_sentences_not_python_values(capsys):
    show = _printer(as_json=False)
    for event in rollout_events(""):
        show(event)
    err = capsys.readouterr().err
    assert "rollout stopped after batch 1 of 3: n/1, n/2 failed" in err
    assert "rollout r1: journal /j/.jsonl" in err
    assert "resume: 1 of 2 finished container(s) still healthy; to run again: n/1" in err
    assert "health gate after batch 1: FAILED" in err and "n/2: check" in err
    for repr_mark in ("{'", "['", "': ", "{}", "[]"):
        assert repr_mark not in err, err


def test_rollout_stop_without_a_batch(capsys):
    show = _printer(as_json=False)
    show({"kind": "rollout-stop", "reason": "interrupted"})
    assert "rollout stopped: interrupted" in capsys.readouterr().err


def test_cli_error_line_shows_control_codes_visibly(tmp_path):
    import subprocess
    import sys

    missing = tmp_path / "inv\x1b[31m.yml"
    proc = subprocess.run(
        [sys.executable, "-m", "pctfleet", "exec", "-i", str(missing), "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stderr
    assert "inv\\x1b[31m.yml" in proc.stderr and "\x1b[31m.yml" not in proc.stderr
