"""Rendering an audit: drift per container and the fleet's version matrix."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from pctfleet.cuda.audit import MATRIX, ContainerAudit, majority, summary
from pctfleet.status import Status
from pctfleet.textout import line

STYLE = {Status.CLEAN: "green", Status.DRIFT: "bold yellow"}


def render(console: Console, audits: list[ContainerAudit]) -> None:
    for audit in audits:
        style = STYLE.get(audit.status, "bold magenta")
        console.print(line((f"{audit.container}: {audit.status}", style), f" {audit.message}"))
        for item in audit.items:
            console.print(
                line(
                    f"  {item.kind:13} {item.what}\n    expected: {_short(item.expected)}"
                    f"\n    actual:   {_short(item.actual)}"
                )
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
            blank = [line()] * (len(MATRIX) - 1)
            table.add_row(line(audit.container), line((audit.status, "magenta")), *blank)
            continue
        cells = [
            line((value or "-", "" if value == common[col] else "bold red"))
            for col, value in audit.versions().items()
        ]
        table.add_row(line(audit.container), *cells)
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
