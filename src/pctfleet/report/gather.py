"""Turning one audit pass, verify's result and the journals into a `FleetReport`.

The doctor's verdict is judged from the audit's own probe (its toolchain facts,
what is stale, and the server log's tail, which rides along as one more
snippet): no extra call. Only the compile probe of `pctfleet doctor` is left out.
"""

from __future__ import annotations

import base64
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.report.model import (
    FleetReport,
    add_doctor,
    add_health,
    columns_of,
    container_views,
    timelines,
)

PROBE = "server_log"


def log_snippet(variables: dict) -> str:
    """The server log's tail (doctor's known errors are searched in it), in the audit's probe."""
    from pctfleet.cuda.doctor import LOG_LINES, DoctorRequest
    from pctfleet.sh import snippet

    where = str(variables.get("server_log") or DoctorRequest.server_log)
    return snippet("file_b64", FILE=where, TAIL_LINES=LOG_LINES)


def diagnoses(runs: list, variables: dict[str, dict]) -> dict[str, Any]:
    """Doctor's verdict per container the audit read, from that same reading."""
    from pctfleet.cuda.doctor import judge_read, request_for
    from pctfleet.cuda.facts import parse_toolchain
    from pctfleet.cuda.stale import parse_stale

    found = {}
    for run in runs:
        raw = run.extra_facts.get("fingerprint")
        if not raw:
            continue
        facts = parse_toolchain(raw)
        log = _decoded(run.extra_facts.get(PROBE, ""))
        stale = parse_stale(run.extra_facts.get("stale", ""))
        request = request_for(variables.get(run.key, {}), {})
        found[run.key] = judge_read(run.key, facts, log, stale, request)
    return found


def _decoded(text: str) -> str:
    try:
        return base64.b64decode(text.strip(), validate=True).decode("utf-8", "replace")
    except ValueError:
        return ""


def majority(rows: list[dict[str, str]], columns: list[str]) -> dict[str, str]:
    """Per column, the value most read containers have (cells that differ stand out)."""
    read = [row for row in rows if any(row.values())]
    common = {}
    for col in columns:
        counts = Counter(row.get(col, "") for row in read)
        common[col] = counts.most_common(1)[0][0] if counts else ""
    return common


@dataclass
class Inputs:
    """Everything one report is built from (the CLI gathers it, tests fake it)."""

    audits: list[dict]  # ContainerAudit.as_json()
    fleet: list[dict] = field(default_factory=list)  # FleetItem.as_json()
    verified: list[dict] | None = None  # ContainerResult.as_json(); None: not verified
    diagnoses: dict[str, Any] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)  # RunInfo.as_json(), newest first
    journals: list[Path] = field(default_factory=list)
    nodes: int = 0


def build(inputs: Inputs, known: tuple[str, ...]) -> FleetReport:
    columns = columns_of(inputs.audits, known)
    rows = [
        {c: str((a.get("versions") or {}).get(c) or "") for c in columns} for a in inputs.audits
    ]
    common = majority(rows, columns)
    views = container_views(inputs.audits, columns, common)
    add_health(views, inputs.verified or [])
    add_doctor(views, inputs.diagnoses)
    changes, problems = timelines(inputs.journals)
    for view in views:
        view.timeline = changes.get(view.container, [])
    report = FleetReport(views, columns, common, inputs.fleet, inputs.runs, problems=problems)
    report.cost = cost(inputs)
    return report


def cost(inputs: Inputs) -> dict[str, Any]:
    """pct execs per container at most, as the audit's and verify's transports counted them.
    Verify not run costs none; run but not counted (no count in its rows), it is left out."""
    audit = most_calls(inputs.audits) or 0
    verify = 0 if inputs.verified is None else most_calls(inputs.verified)
    spent = f"verify {verify}" if verify is not None else "verify's not counted"
    text = (
        f"{audit + (verify or 0)} pct exec(s) per container at most (audit {audit}, {spent}, "
        f"doctor 0: judged from the audit's probe), 1 pct list per node ({inputs.nodes})"
    )
    return {"audit": audit, "verify": verify, "doctor": 0, "nodes": inputs.nodes, "text": text}


def most_calls(rows: list[dict]) -> int | None:
    """The largest `remote_calls` among the rows; None where none has a count."""
    calls = [r.get("remote_calls") for r in rows if isinstance(r.get("remote_calls"), int)]
    return max(calls, default=None)


def write_page(where: str, text: str) -> None:
    """`-`: stdout. Else a temporary file beside it, renamed over it: never half-written."""
    if where == "-":
        print(text, end="")
        return
    path = Path(where)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
