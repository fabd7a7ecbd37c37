"""Rendering a doctor's diagnoses: a table per container, or one JSON document."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from pctfleet.cuda.doctor import Diagnosis
from pctfleet.status import Status
from pctfleet.textout import line

MARK = {True: ("pass", "green"), False: ("FAIL", "bold red"), None: ("n/a", "dim")}


def render(console: Console, diagnoses: list[Diagnosis]) -> None:
    for item in diagnoses:
        if item.status not in {Status.OK, Status.PROBLEM}:
            console.print(
                line((f"{item.container}: {item.status}", "bold magenta"), f": {item.message}")
            )
            continue
        console.print(_components(item))
        console.print(_rules(item))
        _probe_and_findings(console, item)
        colour = "green" if item.healthy else "bold red"
        console.print(line((f"{item.container}: {item.verdict}", colour), "\n"))


def _components(item: Diagnosis) -> Table:
    cuda_home = item.facts.cuda_home if item.facts else "?"
    table = Table(
        title=line(f"{item.container}: components (CUDA_HOME {cuda_home})"), title_justify="left"
    )
    table.add_column("component")
    table.add_column("version")
    for name, version in item.components().items():
        table.add_row(line(name), line(version) if version else line(("-", "dim")))
    return table


def _rules(item: Diagnosis) -> Table:
    table = Table(title=line(f"{item.container}: rules (arch {item.arch})"), title_justify="left")
    for column in ("rule", "result", "evidence", "fix"):
        table.add_column(column)
    for rule in item.rules:
        fix = rule.fix if rule.ok is False else ""
        table.add_row(line(rule.rule), line(MARK[rule.ok]), line(rule.evidence), line(fix))
    return table


def _probe_and_findings(console: Console, item: Diagnosis) -> None:
    if item.probe is not None:
        ok = item.probe.compile_ok and item.probe.link_ok
        state = (
            ("compiled and linked", "green")
            if ok
            else ("compile failed" if not item.probe.compile_ok else "link failed", "bold red")
        )
        console.print(line(f"probe ({item.arch}): ", state))
    for stale in item.stale.lines():
        console.print(line(("stale", "bold red"), f" {stale}"))
    for finding in item.findings:
        console.print(
            line(
                ("found", "bold red"),
                f" {finding.cause}\n  ",
                (finding.line, "dim"),
                f"\n  fix: {finding.fix}",
            )
        )


def to_json(diagnoses: list[Diagnosis]) -> str:
    return json.dumps({"containers": [d.as_json() for d in diagnoses]}, indent=2, default=str)
