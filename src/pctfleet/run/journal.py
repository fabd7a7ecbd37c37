"""Run records on disk: one JSON line per task result, so an interrupted run leaves a trail."""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path("~/.local/state/pctfleet/runs")
# How many journals a folder keeps: a count ("200") or an age in days ("30d").
# Applied when a new run starts; `pctfleet runs --keep` applies it now.
DEFAULT_KEEP = "200"


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


FLUSHED_ONLY = frozenset({"task"})  # records made durable by the next fsynced one


class Journal:
    """Append-only JSON lines; each record is flushed to the OS as it is written.

    A record that closes something (a container's outcome, the run's start and
    end) is also fsynced, which makes the task records before it durable too. A
    task record is only flushed: a controller that dies keeps it, and fsyncing
    each of them serialised a large fleet's workers on this file's lock.
    """

    def __init__(
        self, directory: Path | None, run_id: str | None = None, keep: str | None = DEFAULT_KEEP
    ) -> None:
        folder = Path(directory or DEFAULT_DIR).expanduser()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if run_id is None and keep:  # a new run: the folder stays bounded
            prune(folder, keep)
        self.run_id = run_id or new_run_id()
        self.path = folder / f"{self.run_id}.jsonl"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._file = os.fdopen(fd, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, kind: str, **record: Any) -> None:
        line = json.dumps(
            {"t": round(time.time(), 3), "run": self.run_id, "kind": kind, **record}, default=str
        )
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            if kind not in FLUSHED_ONLY:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        with self._lock:
            self._file.close()


def append(directory: Path | None, run_id: str, kind: str, **record: Any) -> None:
    """One more record in a journal already closed (a run's end, with its exit code)."""
    journal = Journal(directory, run_id, keep=None)
    try:
        journal.write(kind, **record)
    finally:
        journal.close()


def read(path: Path) -> list[dict]:
    """Every record of a journal; a torn last line (crash mid-write) is ignored."""
    return read_checked(path)[0]


def read_checked(path: Path) -> tuple[list[dict], list[str]]:
    """Every record of a journal, and a `file:line: why` for each line that is not one."""
    records, problems = [], []
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            torn = "truncated" if number == len(text.splitlines()) else "corrupt"
            problems.append(f"{path}:{number}: {torn} record skipped ({exc.msg})")
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            problems.append(f"{path}:{number}: not a record, skipped")
    return records, problems


def parse_keep(text: str) -> tuple[int, bool]:
    """`--keep`: "200" (journals) or "30d" (days) as (number, is_days); ValueError if neither."""
    value = str(text).strip().lower()
    days = value.endswith("d")
    number = int(value[:-1] if days else value)
    if number < 1:
        raise ValueError("must be at least 1")
    return number, days


def prune(folder: Path, keep: str) -> list[Path]:
    """Remove the journals of `folder` beyond `keep` (oldest first); the ones removed."""
    number, days = parse_keep(keep)
    journals = sorted(Path(folder).glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    if days:
        cutoff = time.time() - number * 86400
        doomed = [p for p in journals if p.stat().st_mtime < cutoff]
    else:
        doomed = journals[number:]
    for path in doomed:
        path.unlink(missing_ok=True)
    return doomed
