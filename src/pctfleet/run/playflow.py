"""What the containers of one play (one batch of it, with `serial`) share.

Each container runs in its own thread, not in lock step with the others, so
the play-wide keywords meet here: a `run_once` task is claimed by one
container and its outcome handed to the rest; `meta: end_play`, `end_batch`
and a failure under `any_errors_fatal` end the play for every container
before its next task; `serial` and `max_fail_percentage` decide after each
batch whether the next one starts.

No container ever waits on one that cannot move: a container waits only for
a container earlier in play order that is still running (it reaches the task
or leaves the play), or for the one that claimed the task (it is running it,
and publishes its outcome even when it raised).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

from pctfleet.status import SUCCESS


class PlayEnded(Exception):
    """This container's play ends here, and it is no failure (`meta: end_host`, ...)."""


@dataclass(frozen=True)
class Outcome:
    """A run_once task as the container that ran it ended it."""

    runner: str
    status: str
    msg: str
    values: dict[str, Any] = field(default_factory=dict)  # register, set_fact, include_vars


class PlayFlow:
    """Shared state of one batch of a play: `keys` are its containers in play order."""

    def __init__(
        self, keys: list[str], any_errors_fatal: bool = False, max_fail: float | None = None
    ) -> None:
        self.order = {key: index for index, key in enumerate(keys)}
        self.any_errors_fatal = any_errors_fatal
        self.max_fail = max_fail
        self.failures: list[str] = []
        self.ended = ""  # why every container stops before its next task
        self.end_play = False  # the play's later batches do not start either
        self.abort = ""  # a failure ends the whole run (any_errors_fatal)
        self._cond = threading.Condition()
        self._active: set[str] = set()
        self._reached: dict[Any, set[str]] = {}
        self._claims: dict[Any, str] = {}
        self._outcomes: dict[Any, Outcome] = {}

    def enter(self, key: str) -> None:
        with self._cond:
            self._active.add(key)

    def leave(self, key: str) -> None:
        with self._cond:
            self._active.discard(key)
            self._cond.notify_all()

    def end(self, why: str, *, play: bool = False, abort: bool = False) -> None:
        """Every container of the batch stops before its next task."""
        with self._cond:
            self.ended = self.ended or why
            self.end_play |= play or abort
            self.abort = self.abort or (why if abort else "")

    def failed(self, key: str, task: Any) -> None:
        """`key` failed at `task` (None: not at a task): with any_errors_fatal, all stop."""
        with self._cond:
            self.failures.append(key)
            share = 100.0 * len(self.failures) / max(1, len(self.order))
        name = f" task '{task.name}'" if task is not None else ""
        fatal = getattr(task, "any_errors_fatal", None)
        if fatal if fatal is not None else self.any_errors_fatal:
            self.end(f"any_errors_fatal: {key} failed{name}", abort=True)
        elif self.max_fail is not None and share > self.max_fail:
            count = f"{len(self.failures)}/{len(self.order)}"
            self.end(f"{count} failed, over max_fail_percentage {self.max_fail:g}", abort=True)

    def claim(self, task_key: Any, key: str) -> Outcome | None:
        """None: `key` runs the task and must `publish`; else the outcome to take over."""
        with self._cond:
            self._reached.setdefault(task_key, set()).add(key)
            self._cond.notify_all()
            while True:
                if task_key in self._outcomes:
                    return self._outcomes[task_key]
                if task_key not in self._claims and not self._earlier_running(task_key, key):
                    self._claims[task_key] = key
                    return None
                self._cond.wait(timeout=1.0)

    def publish(self, task_key: Any, outcome: Outcome) -> None:
        with self._cond:
            self._outcomes[task_key] = outcome
            self._cond.notify_all()

    def _earlier_running(self, task_key: Any, key: str) -> bool:
        """A container before `key` in play order is running and has not reached the task."""
        reached = self._reached[task_key]
        mine = self.order.get(key, -1)
        return any(
            self.order.get(other, mine) < mine and other not in reached for other in self._active
        )


def parse_percentage(value: Any) -> float | None:
    """max_fail_percentage: a number 0..100 (a "30%" string too), or None when unset."""
    if value is None:
        return None
    text = str(value).strip().removesuffix("%")
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if isinstance(value, bool) or not 0 <= number <= 100:
        raise ValueError(f"must be a percentage from 0 to 100, got {value!r}")
    return number


def batch_stop(index: int, runs: list, flow: PlayFlow) -> str:
    """Why no further batch (and no later play) starts after batch `index`, or "".

    As Ansible: a failure under any_errors_fatal, more failed than
    max_fail_percentage allows, or every container of the batch failed."""
    failed = [run.key for run in runs if run.status not in SUCCESS]
    if flow.abort:
        return f"batch {index}: {flow.abort}"
    if failed and len(failed) == len(runs):
        return f"batch {index}: every container failed ({', '.join(failed)})"
    if failed and flow.max_fail is not None and 100.0 * len(failed) / len(runs) > flow.max_fail:
        count = f"{len(failed)}/{len(runs)}"
        return f"batch {index}: {count} failed, over max_fail_percentage {flow.max_fail:g}"
    return ""
