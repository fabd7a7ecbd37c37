"""What the containers of one play (one batch of it, with `serial`) share.

Each container runs in its own thread, so the play-wide keywords meet here:
a `run_once` task is claimed by one container and its outcome handed to the
rest; `meta: end_play`, `end_batch` and a failure under `any_errors_fatal` or
over `max_fail_percentage` end the play for every container before its next
task; `serial` and `max_fail_percentage` decide after each batch whether the
next one starts.

Containers run on independently, except in a play where one container can end
the others' (`lockstep`: one of those keywords is in it). There they move in
step, as Ansible's linear strategy moves its hosts: none starts an item of the
play (a task, a block, an include, a handler) before every running container
has reached it, so each stops where Ansible's host would. An item's position is
its path in the play (indices through blocks and includes), compared in order,
so a container that skipped a block is not held back by it.

No container ever waits on one that cannot move: a container waits only for
a container earlier in play order that is still running (it reaches the task
or leaves the play), or for the one that claimed the task (it is running it,
and publishes its outcome even when it raised); in step, only for one behind
it, and the one furthest behind never waits.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from pctfleet.status import SUCCESS

_PAST_ALL = (sys.maxsize,)  # after every item of a play: no running container


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
        self,
        keys: list[str],
        any_errors_fatal: bool = False,
        max_fail: float | None = None,
        lockstep: bool = False,
    ) -> None:
        self.order = {key: index for index, key in enumerate(keys)}
        self.any_errors_fatal = any_errors_fatal
        self.max_fail = max_fail
        self.lockstep = lockstep
        self._at: dict[str, tuple[int, ...]] = {}  # in step: the item each has reached
        self._last: tuple[int, ...] = _PAST_ALL  # in step: the furthest behind's item
        # In step: every failure under any_errors_fatal (item, container, why), and how
        # many of them each container has met.
        self._fatal: list[tuple[tuple[int, ...], str, str]] = []
        self._fatal_seen: dict[str, int] = {}  # how many of them each container has met
        self.failures: list[str] = []
        self.ended = ""  # why every container stops before its next task
        self.ended_at: tuple[int, ...] | None = None  # in step: the item it ended at
        self.end_play = False  # the play's later batches do not start either
        self.abort = ""  # a failure ends the whole run (any_errors_fatal)
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # waiters in step, and the rest
        self._claim_moved = threading.Condition(lock)  # waiters in claim
        self._active: set[str] = set()
        self._reached: dict[Any, set[str]] = {}
        self._claims: dict[Any, str] = {}
        self._outcomes: dict[Any, Outcome] = {}

    def enter(self, key: str) -> None:
        with self._cond:
            self._active.add(key)
            self._last = ()  # it has reached nothing yet

    def starting(self, container: Any) -> None:
        """The scheduler starts `container` (before any started with it runs): in step,
        it counts from now, so none runs ahead of batch-mates still on their way."""
        self.enter(container.key)

    def cancelled(self, container: Any) -> None:
        """Started, but it never ran (an interrupt): nobody waits for it."""
        self.leave(container.key)

    def leave(self, key: str) -> None:
        with self._cond:
            self._active.discard(key)
            if self.lockstep and self._at.get(key, ()) <= self._last:
                self._find_last()
            self._cond.notify_all()
            self._claim_moved.notify_all()

    def step(self, key: str, position: tuple[int, ...], stop: threading.Event) -> None:
        """In step: `key` has reached the item at `position`; return once every running
        container has reached it or gone past it (or left the play, or `stop` is set)."""
        if not self.lockstep:
            return
        with self._cond:
            was = self._at.get(key, ())
            self._at[key] = position
            self._claim_moved.notify_all()  # a claim may wait for it to pass its point
            if was <= self._last:  # it was (one of) the last: the last may have moved on
                self._find_last()
            while not stop.is_set() and self._last < position:
                self._cond.wait(timeout=0.5)

    def _find_last(self) -> None:
        """Where the running container furthest behind is; the waiters are woken only
        when that moved on (once an item, not once a container: a large batch would
        otherwise wake every waiter at every step)."""
        last = min((self._at.get(k, ()) for k in self._active), default=_PAST_ALL)
        if last != self._last:
            self._last = last
            self._cond.notify_all()

    def end(
        self,
        why: str,
        *,
        play: bool = False,
        abort: bool = False,
        at: tuple[int, ...] | None = None,
    ) -> None:
        """Every container of the batch stops before its next task (in step: after
        the item `at`, which the others still run, as Ansible runs it on every host)."""
        with self._cond:
            if not self.ended:  # ended_at first: stops_before reads both without the lock
                self.ended_at = at
                self.ended = why
            self.end_play |= play or abort
            self.abort = self.abort or (why if abort else "")

    def stops_before(self, position: tuple[int, ...]) -> str:
        """Why a container stops before the item at `position`, or ""."""
        why = self.ended  # read before ended_at, which end() writes first
        if not why or (self.lockstep and self.ended_at == position):
            return ""
        return why

    def task_failed(self, key: str, task: Any, at: tuple[int, ...]) -> None:
        """`key`'s task at `at` failed (whether a rescue takes it or not): under
        any_errors_fatal, in step, every other container fails with it after that item."""
        if self.lockstep and self._is_fatal(task):
            with self._cond:
                self._fatal.append((at, key, f"any_errors_fatal: {key} failed"))

    def fails_with(self, key: str, position: tuple[int, ...], handling: bool) -> str:
        """Why `key` fails now, at `position`, with a failure under any_errors_fatal in
        another container at an item before it; "" when none. As ansible-core (2.17
        on) fails every host of the batch: one in a block with a `rescue` runs it,
        and goes on; one already in a rescue or always for its own failure
        (`handling`) is left to it. Each such failure is met once."""
        with self._cond:
            seen, found = self._fatal_seen.get(key, 0), ""
            for at, runner, why in self._fatal[seen:]:
                if not position > at:
                    break
                seen += 1  # all met here at once: a rescue is not failed by its twin
                if runner != key and not handling:
                    found = found or why
            self._fatal_seen[key] = seen
            return found

    def _is_fatal(self, task: Any) -> bool:
        fatal = getattr(task, "any_errors_fatal", None)
        return fatal if fatal is not None else self.any_errors_fatal

    def failed(self, key: str, task: Any) -> None:
        """`key` failed at `task` (None: not at a task): with any_errors_fatal, all stop."""
        with self._cond:
            self.failures.append(key)
            share = 100.0 * len(self.failures) / max(1, len(self.order))
            at = self._at.get(key)
        name = f" task '{task.name}'" if task is not None else ""
        if self._is_fatal(task):
            self.end(f"any_errors_fatal: {key} failed{name}", abort=True, at=at)
        elif self.max_fail is not None and share > self.max_fail:
            count = f"{len(self.failures)}/{len(self.order)}"
            why = f"{count} failed, over max_fail_percentage {self.max_fail:g}"
            self.end(why, abort=True, at=at)

    def claim(self, task_key: Any, key: str) -> Outcome | None:
        """None: `key` runs the task and must `publish`; else the outcome to take over."""
        with self._cond:
            self._reached.setdefault(task_key, set()).add(key)
            self._claim_moved.notify_all()
            while True:
                if task_key in self._outcomes:
                    return self._outcomes[task_key]
                if task_key not in self._claims and not self._earlier_running(task_key, key):
                    self._claims[task_key] = key
                    return None
                self._claim_moved.wait(timeout=1.0)

    def publish(self, task_key: Any, outcome: Outcome) -> None:
        with self._cond:
            self._outcomes[task_key] = outcome
            self._claim_moved.notify_all()

    def _earlier_running(self, task_key: Any, key: str) -> bool:
        """A container before `key` in play order is running and has not reached the task."""
        reached = self._reached[task_key]
        mine = self.order.get(key, -1)
        here = self._at.get(key, ())
        return any(
            self.order.get(other, mine) < mine
            and other not in reached
            and not self._at.get(other, ()) > here  # in step, gone past it: never reaches it
            for other in self._active
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
