"""Rendering an audit: drift per container and the fleet's version matrix."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from . import exitcodes
from .audit import MATRIX, ContainerAudit, majority, summary

STYLE = {"clean": "green", "drift": "bold yellow"}


def render(console: Console, audits: list[ContainerAudit]) -> None:
    for audit in audits:
        style = STYLE.get(audit.status, "bold magenta")
        console.print(
            f"[{style}]{audit.container}: {audit.status}[/] {audit.message}", highlight=False
        )
        for item in audit.items:
            console.print(
                f"  {item.kind:13} {item.what}\n    expected: {_short(item.expected)}"
                f"\n    actual:   {_short(item.actual)}",
                highlight=False,
            )
    console.print(matrix(audits))


def _short(text: str, limit: int = 200) -> str:
    flat = " | ".join(line for line in text.splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def matrix(audits: list[ContainerAudit]) -> Table:
    """Versions per container; a cell that differs from most of the fleet is highlighted."""
    common = majority(audits)
    table = Table(
        title="fleet versions (highlighted: differs from most containers)", title_justify="left"
    )
    table.add_column("container")
    for col in MATRIX:
        table.add_column(col)
    for audit in sorted(audits, key=lambda a: tuple(a.versions().values())):
        if not audit.fingerprint:
            table.add_row(
                audit.container, *[f"[magenta]{audit.status}[/]"] + [""] * (len(MATRIX) - 1)
            )
            continue
        cells = [
            value or "-" if value == common[col] else f"[bold red]{value or '-'}[/]"
            for col, value in audit.versions().items()
        ]
        table.add_row(audit.container, *cells)
    return table


def to_json(audits: list[ContainerAudit]) -> str:
    return json.dumps(
        {
            "containers": [a.as_json() for a in audits],
            "summary": summary(audits),
            "majority": majority(audits),
        },
        indent=2,
    )


def exit_code(audits: list[ContainerAudit]) -> int:
    statuses = {a.status for a in audits}
    if statuses - {"clean", "drift"}:
        return exitcodes.ERROR
    return exitcodes.FAILED if "drift" in statuses else exitcodes.OK
