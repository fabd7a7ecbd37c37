"""What a fleet report shows, built from results the other commands already produce.

Fields of the audit's, verify's and the journals' records are read with
`.get`: a field added later is ignored, one missing is shown as unknown.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.status import Status

CHANGED = ("changed", "failed")


@dataclass
class Change:
    """One run's effect on one container, from its journal."""

    t: float | None
    run: str
    command: str
    status: str
    changed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    message: str = ""


@dataclass
class ContainerView:
    container: str
    status: str  # the audit's
    message: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    outliers: list[str] = field(default_factory=list)
    drift: list[dict[str, str]] = field(default_factory=list)
    health: str | None = None  # verify's status; None: not verified
    checks: list[dict[str, str]] = field(default_factory=list)  # those that did not pass
    doctor: str | None = None  # ok | problem; None: not judged (not read)
    verdict: str = ""
    evidence: list[str] = field(default_factory=list)
    timeline: list[Change] = field(default_factory=list)


@dataclass
class FleetReport:
    containers: list[ContainerView]
    columns: list[str]
    majority: dict[str, str]
    fleet: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    generated: float = field(default_factory=time.time)

    def statuses(self) -> list[str]:
        """Each finding as an audit status: exit codes follow `audit`'s policy."""
        found = [str(c.status) for c in self.containers]
        found += [HEALTH.get(c.health, Status.ERROR) for c in self.containers if c.health]
        found += [Status.DRIFT for c in self.containers if c.doctor == Status.PROBLEM]
        found += [FLEET.get(str(i.get("kind")), Status.ERROR) for i in self.fleet]
        return found


HEALTH = {"passed": Status.CLEAN, "failed": Status.DRIFT}
FLEET = {"unmanaged": Status.DRIFT, "missing": Status.DRIFT}


def when(t: Any) -> str:  # noqa: ANN401 - a journal's or the run index's value, unchecked
    """A time as local date and time; "?" for none, text or a number out of range."""
    if isinstance(t, bool) or not isinstance(t, int | float) or not t:
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    except (OverflowError, OSError, ValueError):
        return "?"


def text(value: Any) -> str:
    return "" if value is None else str(value)


def container_views(audits: list[dict], columns: list[str], majority: dict) -> list[ContainerView]:
    """A view per audited container (its `as_json()`): versions, outliers, drift."""
    views = []
    for audit in audits:
        versions = {col: text((audit.get("versions") or {}).get(col)) for col in columns}
        read = any(versions.values())
        outliers = [c for c in columns if read and versions[c] != majority.get(c, "")]
        drift = [
            {k: text(item.get(k)) for k in ("kind", "what", "expected", "actual", "fix")}
            for item in audit.get("drift") or []
        ]
        name = text(audit.get("container"))
        status = text(audit.get("status")) or "?"
        views.append(
            ContainerView(name, status, text(audit.get("message")), versions, outliers, drift)
        )
    return views


def columns_of(audits: list[dict], known: tuple[str, ...]) -> list[str]:
    """The matrix's columns: the known ones in order, then any newer ones the audit gives."""
    extra = {k for a in audits for k in (a.get("versions") or {}) if k not in known}
    return [*known, *sorted(extra)]


def add_health(views: list[ContainerView], verified: list[dict]) -> None:
    """Verify's status per container and every check that did not pass, with its message."""
    by_name = {text(v.get("container")): v for v in verified}
    for view in views:
        found = by_name.get(view.container)
        if found is None:
            continue
        view.health = text(found.get("status")) or "?"
        view.checks = [
            {k: text(c.get(k)) for k in ("id", "outcome", "message")}
            for c in found.get("checks") or []
            if c.get("outcome") != "passed"
        ]
        if not view.checks and found.get("message") and view.health != "passed":
            view.checks = [{"id": "-", "outcome": view.health, "message": text(found["message"])}]


def add_doctor(views: list[ContainerView], diagnoses: dict[str, Any]) -> None:
    """The doctor's verdict and the evidence of each failing rule, finding and stale item."""
    for view in views:
        item = diagnoses.get(view.container)
        if item is None:
            continue
        view.doctor, view.verdict = str(item.status), item.verdict
        view.evidence = [f"{r.rule}: {r.evidence}" for r in item.rules if r.ok is False]
        view.evidence += [f"{f.cause}: {f.line}" for f in item.findings]
        view.evidence += item.stale.lines()


def timelines(paths: list[Path]) -> tuple[dict[str, list[Change]], list[str]]:
    """Per container, what each journaled run did to it (oldest first), and unreadable lines."""
    from pctfleet.run.journal import read_checked

    found: dict[str, list[Change]] = {}
    problems: list[str] = []
    for path in sorted(paths, key=lambda p: p.stem):
        records, bad = read_checked(path)
        problems += bad
        for key, change in _changes(path, records).items():
            found.setdefault(key, []).append(change)
    return found, problems


def _changes(path: Path, records: list[dict]) -> dict[str, Change]:
    first = records[0] if records else {}
    run, command = text(first.get("run")) or path.stem, text(first.get("command")) or "run"
    out: dict[str, Change] = {}
    for record in records:
        key = record.get("container")
        if not isinstance(key, str):
            continue
        change = out.setdefault(key, Change(record.get("t"), run, command, "?"))
        if record.get("kind") == "task" and record.get("status") in CHANGED:
            names = change.changed if record["status"] == "changed" else change.failed
            names.append(text(record.get("name")))
        elif record.get("kind") == "container":
            change.status, change.message = text(record.get("status")), text(record.get("message"))
    return out
