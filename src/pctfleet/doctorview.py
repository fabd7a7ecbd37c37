"""Rendering a doctor's diagnoses: a table per container, or one JSON document."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from . import exitcodes
from .doctor import Diagnosis

MARK = {True: "[green]pass[/]", False: "[bold red]FAIL[/]", None: "[dim]n/a[/]"}


def render(console: Console, diagnoses: list[Diagnosis]) -> None:
    for item in diagnoses:
        if item.status not in {"ok", "problem"}:
            console.print(f"[bold magenta]{item.container}: {item.status}[/]: {item.message}")
            continue
        console.print(_components(item))
        console.print(_rules(item))
        _probe_and_findings(console, item)
        colour = "green" if item.healthy else "bold red"
        console.print(f"[{colour}]{item.container}: {item.verdict}[/]\n", highlight=False)


def _components(item: Diagnosis) -> Table:
    table = Table(
        title=f"{item.container}: components (CUDA_HOME "
        f"{item.facts.cuda_home if item.facts else '?'})",
        title_justify="left",
    )
    table.add_column("component")
    table.add_column("version")
    for name, version in item.components().items():
        table.add_row(name, version or "[dim]-[/]")
    return table


def _rules(item: Diagnosis) -> Table:
    table = Table(title=f"{item.container}: rules (arch {item.arch})", title_justify="left")
    for column in ("rule", "result", "evidence", "fix"):
        table.add_column(column)
    for rule in item.rules:
        table.add_row(rule.rule, MARK[rule.ok], rule.evidence, rule.fix if rule.ok is False else "")
    return table


def _probe_and_findings(console: Console, item: Diagnosis) -> None:
    if item.probe is not None:
        ok = item.probe.compile_ok and item.probe.link_ok
        state = (
            "[green]compiled and linked[/]"
            if ok
            else (
                "[bold red]compile failed[/]"
                if not item.probe.compile_ok
                else "[bold red]link failed[/]"
            )
        )
        console.print(f"probe ({item.arch}): {state}", highlight=False)
    for finding in item.findings:
        console.print(
            f"[bold red]found[/] {finding.cause}\n  [dim]{finding.line}[/]\n  fix: {finding.fix}",
            highlight=False,
        )


def to_json(diagnoses: list[Diagnosis]) -> str:
    return json.dumps({"containers": [d.as_json() for d in diagnoses]}, indent=2, default=str)


def exit_code(diagnoses: list[Diagnosis]) -> int:
    statuses = {d.status for d in diagnoses}
    if statuses - {"ok", "problem"}:
        return exitcodes.UNREACHABLE
    return exitcodes.FAILED if "problem" in statuses else exitcodes.OK
