"""The report as Markdown: the same sections as the HTML page, as tables and lists.

Every string from a container, an inventory or a journal goes through `esc`:
Markdown and inline HTML characters are backslash-escaped, so a value can
neither break a table (`|`), open code (`` ` ``) nor become a tag or a link.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from pctfleet.report.model import Change, ContainerView, FleetReport, when

SPECIAL = re.compile(r"([\\`*_\[\]<>|~#&!])")


def esc(value: object) -> str:
    flat = " ".join(("" if value is None else str(value)).split())
    return SPECIAL.sub(r"\\\1", flat)


def _table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def render(report: FleetReport) -> str:
    parts = [*_head(report), *_matrix(report), *_fleet(report)]
    parts += [*_containers(report.containers), *_runs(report.runs), *_timeline(report.containers)]
    return "\n".join(parts).rstrip("\n") + "\n"


def _head(report: FleetReport) -> list[str]:
    counts = Counter(c.status for c in report.containers)
    said = ", ".join(f"{n} {esc(s)}" for s, n in sorted(counts.items())) or "none"
    lines = ["# pctfleet fleet report", ""]
    lines.append(
        f"generated {when(report.generated)}; {len(report.containers)} container(s): {said}"
    )
    if report.cost:
        lines.append(f"\ncost: {esc(report.cost.get('text', ''))}")
    lines += [f"\n**{esc(p)}**" for p in report.problems]
    return [*lines, ""]


def _matrix(report: FleetReport) -> list[str]:
    rows = []
    for view in report.containers:
        node, _, ctid = view.container.rpartition("/")
        cells = [esc(node), esc(ctid), esc(view.status)]
        for col in report.columns:
            value = esc(view.versions.get(col) or "-")
            cells.append(f"**{value}** (!)" if col in view.outliers else value)
        rows.append(cells)
    intro = ["## Version matrix", "", "(!): differs from most containers", ""]
    return intro + _table(["node", "ct", "audit", *report.columns], rows)


def _fleet(report: FleetReport) -> list[str]:
    if not report.fleet:
        return []
    keys = ("node", "ctid", "kind", "status", "name", "detail")
    rows = [[esc(item.get(k)) for k in keys] for item in report.fleet]
    return ["## Fleet drift (nodes vs inventory)", "", *_table(keys, rows)]


def _containers(views: list[ContainerView]) -> list[str]:
    out = ["## Drift and health per container", ""]
    for view in views:
        out += [f"### {esc(view.container)}", ""]
        out.append(
            f"audit: {esc(view.status)}, verify: {esc(view.health or 'not checked')}, "
            f"doctor: {esc(view.doctor or 'not checked')}"
        )
        out += [f"\n{esc(view.message)}"] if view.message else []
        out.append("")
        keys = ("kind", "what", "expected", "actual", "fix")
        if view.drift:
            out += _table(keys, ([esc(d[k]) for k in keys] for d in view.drift))
        if view.checks:
            rows = ([esc(c["id"]), esc(c["outcome"]), esc(c["message"])] for c in view.checks)
            out += _table(("check", "outcome", "evidence"), rows)
        if view.verdict:
            out += [f"doctor: {esc(view.verdict)}", ""]
        out += [f"- {esc(line)}" for line in view.evidence]
        out += [""] if view.evidence else []
    return out


def _runs(runs: list[dict]) -> list[str]:
    keys = ("id", "kind", "command", "playbook", "containers", "state", "exit_code")
    if not runs:
        return ["## Last runs", "", "no journal found", ""]
    rows = ([esc(when(r.get("started"))), *(esc(r.get(k, "?")) for k in keys)] for r in runs)
    return ["## Last runs", "", *_table(("started", *keys), rows)]


def _change(change: Change) -> str:
    said = f"{when(change.t)} {esc(change.run)} {esc(change.command)}: {esc(change.status)}"
    if change.changed:
        said += "; changed " + ", ".join(esc(n) for n in change.changed)
    if change.failed:
        said += "; failed " + ", ".join(esc(n) for n in change.failed)
    return f"1. {said}" + (f"; {esc(change.message)}" if change.message else "")


def _timeline(views: list[ContainerView]) -> list[str]:
    out = ["## Changes per container (journals)", ""]
    for view in views:
        out += [f"### {esc(view.container)}", ""]
        out += [*map(_change, view.timeline)] or ["no journaled run touched it"]
        out.append("")
    return out
