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


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


class Journal:
    """Append-only JSON lines; each record is flushed and fsynced as it is written."""

    def __init__(self, directory: Path | None, run_id: str | None = None) -> None:
        self.run_id = run_id or new_run_id()
        folder = Path(directory or DEFAULT_DIR).expanduser()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
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
            os.fsync(self._file.fileno())

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read(path: Path) -> list[dict]:
    """Every record of a journal; a torn last line (crash mid-write) is ignored."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
