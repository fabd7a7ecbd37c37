"""Progress of `pctfleet verify`, told by the child pytest to the CLI as it happens.

The child writes one JSON line per event to the pipe the parent names in
$PCTFLEET_VERIFY_EVENTS (a file descriptor): a container's facts begin to be read
(`start`), a check begins on it (`task`), its last check ended (`finish`). The
parent turns them into a progress display's events (pctfleet.run.observe).
Without the variable (pytest run by hand) nothing is written.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import IO, Any

ENV = "PCTFLEET_VERIFY_EVENTS"

_lock = threading.Lock()
_stream: list[IO[str]] = []


def emit(kind: str, container: str, **data: Any) -> None:
    """Tell the parent; called from the fact readers' threads and pytest's own."""
    fd = os.environ.get(ENV)
    if not fd or not container:
        return
    with _lock:
        try:
            if not _stream:
                _stream.append(os.fdopen(int(fd), "w", buffering=1, encoding="utf-8"))
            _stream[0].write(json.dumps({"kind": kind, "container": container, **data}) + "\n")
        except (OSError, ValueError):  # no one listens any more: the checks go on regardless
            pass


def container_of(host: Any) -> str:
    """The container key a testinfra host stands for (its pct:// spec's, else its name)."""
    backend = host.backend
    return getattr(getattr(backend, "spec", None), "key", None) or backend.get_hostname()


@dataclass
class Progress:
    """What an observer's `run` argument needs: the container, its node, how it ended."""

    key: str
    status: str = ""

    @property
    def node(self) -> str:
        return self.key.split("/")[0]


class Feed:
    """Hands the child's event lines on to an observer (pctfleet.run.observe.Observer)."""

    def __init__(self, observer: Any, rename: dict[str, str] | None = None) -> None:
        self.observer = observer
        self.rename = rename or {}  # the local backend's own host name -> its container key
        self.started: set[str] = set()

    def line(self, text: str) -> None:
        try:
            event = json.loads(text)
            key = self.rename.get(event["container"], event["container"])
            kind, name, status = event["kind"], event.get("name", ""), event.get("status", "")
        except (ValueError, KeyError, TypeError, AttributeError):
            return  # not one of ours (a check may write there too): the display goes on
        if not isinstance(key, str):
            return
        if key not in self.started:  # the first word of a container (a check may come first)
            self.started.add(key)
            self.observer.container_started(Progress(key))
        if kind == "task":
            self.observer.task_started(Progress(key), str(name))
        elif kind == "finish":
            self.observer.container_finished(Progress(key, "ok" if status == "passed" else status))
