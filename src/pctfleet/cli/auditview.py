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
    """A summary (by node), each container needing attention, the version matrix.

    On a large fleet clean containers are counted, not listed, and the matrix
    keeps only the rows that differ from the majority.
    """
    from pctfleet.cli.progress import COMPACT_OVER, outcome_summary

    compact = len(audits) > COMPACT_OVER
    for text in outcome_summary(audits, Status.CLEAN) if compact else []:
        console.print(line(text))
    for audit in audits:
        if compact and audit.status == Status.CLEAN:
            continue
        style = STYLE.get(audit.status, "bold magenta")
        console.print(line((f"{audit.container}: {audit.status}", style), f" {audit.message}"))
        for item in audit.items:
            console.print(
                line(
                    f"  {item.kind:13} {item.what}\n    expected: {_short(item.expected)}"
                    f"\n    actual:   {_short(item.actual)}"
                    + (f"\n    fix:      {_short(item.fix)}" if item.fix else "")
                )
            )
    console.print(matrix(audits, compact))


def _short(text: str, limit: int = 200) -> str:
    flat = " | ".join(line for line in text.splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def matrix(audits: list[ContainerAudit], compact: bool = False) -> Table:
    """Versions per container; a cell that differs from most of the fleet is highlighted.

    `compact`: only the containers that differ (or were not read), and how many agree."""
    common = majority(audits)
    if compact:
        shown = [a for a in audits if not a.fingerprint or a.versions() != common]
        agree = len(audits) - len(shown)
        audits = shown
    table = Table(
        title="fleet versions (highlighted: differs from most containers)", title_justify="left"
    )
    if compact:
        table.caption = f"{agree} other container(s) have the majority's versions"
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


def render_fleet(console: Console, fleet: list) -> None:
    """Fleet drift, one line each: `node1/290: unmanaged (stopped, name x)`."""
    for item in fleet:
        where = f"{item.node}/{item.ctid}" if item.ctid is not None else f"node {item.node}"
        said = ", ".join(
            x for x in (item.status, item.name and f"name {item.name}", item.detail) if x
        )
        console.print(line((f"{where}: {item.kind}", "bold yellow"), f" ({said})" if said else ""))


def to_json(
    audits: list[ContainerAudit], fleet: list | None = None, nodes: list | None = None
) -> str:
    return json.dumps(
        {
            "fleet": [item.as_json() for item in fleet or []],
            "nodes": [
                {"node": f.node.name, "address": f.node.address, "gpu": f.gpu.as_json()}
                for f in nodes or []
                if f.gpu is not None
            ],
            "containers": [a.as_json() for a in audits],
            "summary": summary(audits),
            "majority": majority(audits),
        },
        indent=2,
    )
