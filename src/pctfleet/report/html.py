"""The report as one self-contained HTML page: inline CSS, no script, no external URL.

Every string from a container, an inventory or a journal goes through `esc`;
class names come from fixed sets only, never from data.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable

from pctfleet.report.model import Change, ContainerView, FleetReport, when

GOOD = frozenset({"clean", "passed", "ok", "changed"})
WARN = frozenset({"drift", "problem", "failed", "unmanaged", "missing"})

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dce4}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#5a6272}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #d8dce4;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f1f3f7}
td.outlier{background:#ffd9d6;color:#8a1010;font-weight:600}
.good{color:#176b2c;font-weight:600}.warn{color:#9a5b00;font-weight:600}
.bad{color:#b00020;font-weight:700}
.badge{display:inline-block;margin-right:10px}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap}
ol.timeline{margin:4px 0 4px 18px;padding:0}
"""


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def tone(status: str | None) -> str:
    if status in GOOD:
        return "good"
    return "warn" if status in WARN else "bad"


def render(report: FleetReport) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>pctfleet fleet report</title>",
        f"<style>{STYLE}</style></head><body>",
        *_head(report),
        *_matrix(report),
        *_fleet(report),
        *_containers(report.containers),
        *_runs(report.runs),
        *_timeline(report.containers),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _head(report: FleetReport) -> list[str]:
    counts = Counter(c.status for c in report.containers)
    said = ", ".join(f"{n} {esc(s)}" for s, n in sorted(counts.items())) or "none"
    cost = report.cost
    lines = [
        "<h1>pctfleet fleet report</h1>",
        f'<p class="meta">generated {esc(when(report.generated))}; '
        f"{len(report.containers)} container(s): {said}</p>",
    ]
    if cost:
        lines.append(f'<p class="meta" id="cost">cost: {esc(cost.get("text", ""))}</p>')
    lines += [f'<p class="bad">{esc(p)}</p>' for p in report.problems]
    return lines


def _table(head: Iterable[str], rows: Iterable[str], attrs: str = "") -> list[str]:
    cells = "".join(f"<th>{esc(h)}</th>" for h in head)
    return [f"<table{attrs}><thead><tr>{cells}</tr></thead><tbody>", *rows, "</tbody></table>"]


def _matrix(report: FleetReport) -> list[str]:
    rows = []
    for view in report.containers:
        node, _, ctid = view.container.rpartition("/")
        cells = [f"<td>{esc(node)}</td>", f"<td>{esc(ctid)}</td>"]
        cells.append(f'<td class="{tone(view.status)}">{esc(view.status)}</td>')
        for col in report.columns:
            value = view.versions.get(col) or "-"
            if col in view.outliers:
                most = esc(report.majority.get(col) or "-")
                cells.append(
                    f'<td class="outlier" title="most containers: {most}">{esc(value)}</td>'
                )
            else:
                cells.append(f"<td>{esc(value)}</td>")
        rows.append(
            f'<tr class="container" data-container="{esc(view.container)}">{"".join(cells)}</tr>'
        )
    head = ["node", "ct", "audit", *report.columns]
    return [
        '<h2 id="matrix">Version matrix</h2>',
        '<p class="meta">highlighted: differs from most containers'
        " (hover: the majority's value)</p>",
        *_table(head, rows, ' class="matrix"'),
    ]


def _fleet(report: FleetReport) -> list[str]:
    if not report.fleet:
        return []
    rows = [
        "<tr>"
        + "".join(
            f"<td>{esc(i.get(k))}</td>"
            for k in ("node", "ctid", "kind", "status", "name", "detail")
        )
        + "</tr>"
        for i in report.fleet
    ]
    return [
        '<h2 id="fleet">Fleet drift (nodes vs inventory)</h2>',
        *_table(("node", "ctid", "kind", "status", "name", "detail"), rows, ' class="fleet"'),
    ]


def _badge(label: str, status: str | None) -> str:
    shown = status if status else "not checked"
    return (
        f'<span class="badge">{esc(label)}: <span class="{tone(status)}">{esc(shown)}</span></span>'
    )


def _containers(views: list[ContainerView]) -> list[str]:
    out = ['<h2 id="containers">Drift and health per container</h2>']
    for view in views:
        out.append(f'<section class="ct" data-container="{esc(view.container)}">')
        out.append(f"<h3>{esc(view.container)}</h3><p>")
        out += [_badge("audit", view.status), _badge("verify", view.health)]
        out += [_badge("doctor", view.doctor), "</p>"]
        if view.message:
            out.append(f"<p><code>{esc(view.message)}</code></p>")
        if view.drift:
            rows = [
                "<tr>" + "".join(f"<td><code>{esc(d[k])}</code></td>" for k in DRIFT) + "</tr>"
                for d in view.drift
            ]
            out += _table(DRIFT, rows, ' class="drift"')
        if view.checks:
            rows = [
                "<tr>" + "".join(f"<td><code>{esc(c[k])}</code></td>" for k in CHECK) + "</tr>"
                for c in view.checks
            ]
            out += _table(("check", "outcome", "evidence"), rows, ' class="checks"')
        if view.verdict:
            out.append(
                f'<p>doctor: <span class="{tone(view.doctor)}">{esc(view.verdict)}</span></p>'
            )
        out += [f"<p><code>{esc(line)}</code></p>" for line in view.evidence]
        out.append("</section>")
    return out


DRIFT = ("kind", "what", "expected", "actual", "fix")
CHECK = ("id", "outcome", "message")
RUN_COLUMNS = ("id", "kind", "command", "playbook", "containers", "state", "exit_code")


def _runs(runs: list[dict]) -> list[str]:
    out = ['<h2 id="runs">Last runs</h2>']
    if not runs:
        return [*out, "<p>no journal found</p>"]
    rows = []
    for run in runs:
        cells = [f"<td>{esc(when(run.get('started')))}</td>"]
        cells += [f"<td>{esc(run.get(k, '?'))}</td>" for k in RUN_COLUMNS]
        rows.append(f'<tr class="run">{"".join(cells)}</tr>')
    return [*out, *_table(("started", *RUN_COLUMNS), rows, ' class="runs"')]


def _change(change: Change) -> str:
    said = [f"{esc(when(change.t))} <code>{esc(change.run)}</code> {esc(change.command)}:"]
    said.append(f'<span class="{tone(change.status)}">{esc(change.status)}</span>')
    if change.changed:
        said.append("changed " + ", ".join(f"<code>{esc(n)}</code>" for n in change.changed))
    if change.failed:
        said.append("failed " + ", ".join(f"<code>{esc(n)}</code>" for n in change.failed))
    if change.message:
        said.append(f"<code>{esc(change.message)}</code>")
    return f"<li>{' '.join(said)}</li>"


def _timeline(views: list[ContainerView]) -> list[str]:
    out = ['<h2 id="timeline">Changes per container (journals)</h2>']
    for view in views:
        out.append(
            f'<h3 class="tl" data-container="{esc(view.container)}">{esc(view.container)}</h3>'
        )
        if not view.timeline:
            out.append("<p>no journaled run touched it</p>")
            continue
        out += ['<ol class="timeline">', *map(_change, view.timeline), "</ol>"]
    return out
