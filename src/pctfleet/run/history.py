"""Run history: what the journals of past and running runs and rollouts say.

A run's journal holds `start` (playbook, containers, command, pid), one `task`
record per task result, a `container` record per container and play, and at its
end either `end` (summary, exit code) or `interrupted`. A rollout's holds
`rollout-start` (with its pid), tasks, containers and `rollout-end`; a resume
appends `rollout-resume` (its own pid) and the same again. Nothing here is
invented: what a journal lacks is shown as unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.jsonfields import json_fields
from pctfleet.run import rollout
from pctfleet.run.journal import DEFAULT_DIR, read_checked
from pctfleet.status import UNREACHED, Status, exit_code

ENDS = frozenset({"end", "interrupted", "rollout-end"})
# The records that name the process writing the journal from then on.
WRITERS = frozenset({"start", "rollout-start", "rollout-resume"})
COUNTS = ("ok", "changed", "failed", "unreachable")


def folders(journal_dir: Path | None) -> list[Path]:
    """Where journals are: the one given, else the runs' and the rollouts' defaults."""
    chosen = [journal_dir] if journal_dir else [DEFAULT_DIR, rollout.DEFAULT_DIR]
    return [Path(d).expanduser() for d in chosen]


@dataclass
class RunInfo:
    id: str
    kind: str  # run | rollout
    journal: Path
    started: float | None = None
    command: str | None = None
    playbook: str | None = None
    containers: int | None = None
    summary: dict[str, int] = field(default_factory=dict)
    # finished | interrupted | running | incomplete (no end, its process gone) | no-end (no pid)
    state: str = "running"
    duration: float | None = None
    exit_code: int | None = None

    def counts(self) -> dict[str, int]:
        """ok/changed/failed/unreachable as one line shows them (every unreachable kind)."""
        out = {k: self.summary.get(k, 0) for k in COUNTS[:3]}
        out["unreachable"] = sum(self.summary.get(str(s), 0) for s in UNREACHED)
        return out

    def as_json(self) -> dict:
        names = "id kind journal started command playbook containers summary state duration"
        return json_fields(self, names + " exit_code", digits=3, journal=str(self.journal))


def summarise(path: Path, records: list[dict]) -> RunInfo:
    first = records[0] if records else {}
    kind = "rollout" if first.get("kind") == "rollout-start" else "run"
    info = RunInfo(first.get("run") or path.stem, kind, path, first.get("t"))
    info.playbook = first.get("playbook")
    info.command = first.get("command") or ("rollout" if kind == "rollout" else None)
    last = _last_status(records)
    info.containers = len(first["containers"]) if "containers" in first else len(last) or None
    info.summary = _summary(last, info.containers or 0)
    end = records[-1] if records and records[-1].get("kind") in ENDS else None
    pid = _writer(records)
    if end is not None:
        _ended(info, first, end)
    elif pid is None:
        info.state = "no-end"  # written before runs recorded their pid: alive or not, unknown
    elif not _alive(pid):
        info.state = "incomplete"
    return info


def _writer(records: list[dict]) -> Any:
    """The pid of the process writing the journal now (a resumed rollout's, not the first's)."""
    return next(
        (r["pid"] for r in reversed(records) if r.get("kind") in WRITERS and "pid" in r), None
    )


def _ended(info: RunInfo, first: dict, end: dict) -> None:
    info.duration = end["t"] - first["t"] if "t" in first and "t" in end else None
    if end["kind"] == "end":
        info.state, info.summary, info.exit_code = "finished", end["summary"], end["exit_code"]
    elif end["kind"] == "interrupted":
        info.state, info.exit_code = "interrupted", exit_code("run", [Status.INTERRUPTED])
    else:  # a rollout's end: its exit code is the one `rollout` derives from these lists
        stopped = end.get("stopped")
        words = rollout.end_statuses(end.get("done", []), end.get("failed", []), stopped)
        info.state = "interrupted" if stopped == Status.INTERRUPTED else "finished"
        info.exit_code = exit_code("rollout", words)


def _last_status(records: list[dict]) -> dict[str, str]:
    """Each container's status, as its latest `container` record says."""
    return {r["container"]: r["status"] for r in records if r.get("kind") == "container"}


def _summary(statuses: dict[str, str], containers: int) -> dict[str, int]:
    counts = {"containers": containers}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return counts


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def journals(journal_dir: Path | None) -> list[Path]:
    paths = [p for d in folders(journal_dir) if d.is_dir() for p in d.glob("*.jsonl")]
    return sorted(paths, key=lambda p: p.stem, reverse=True)  # ids start with their time


def recent(journal_dir: Path | None, last: int) -> tuple[list[RunInfo], list[str]]:
    """The `last` newest runs and rollouts, and the journal lines that could not be read."""
    infos, problems = [], []
    for path in journals(journal_dir)[:last]:
        records, bad = read_checked(path)
        problems += bad
        infos.append(summarise(path, records))
    return infos, problems


def find(journal_dir: Path | None, run_id: str) -> Path | None:
    """The journal of `run_id` (or of the one run whose id starts with it)."""
    paths = journals(journal_dir)
    exact = [p for p in paths if p.stem == run_id]
    matches = exact or [p for p in paths if p.stem.startswith(run_id)]
    return matches[0] if len(matches) == 1 else None


def details(
    records: list[dict], container: str | None = None, failed: bool = False
) -> dict[str, dict]:
    """Per container: its latest status and message, and its task records in order."""
    out: dict[str, dict] = {}
    for record in records:
        key = record.get("container")
        if not key or (container and key != container):
            continue
        entry = out.setdefault(key, {"status": None, "message": "", "tasks": []})
        if record["kind"] == "task":
            if not failed or record.get("status") == Status.FAILED:
                entry["tasks"].append(_task(record))
        elif record["kind"] == "container":
            entry["status"], entry["message"] = record.get("status"), record.get("message", "")
    if failed:
        out = {k: v for k, v in out.items() if v["tasks"] or v["status"] not in ("ok", "changed")}
    return out


def _task(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("run", "kind", "container")}
