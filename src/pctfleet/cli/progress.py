"""Progress of a run over many containers: what a person watching it sees.

A `Tracker` hears the run's events (see pctfleet.run.observe) and keeps, per
container, whether it waits, runs or is done, its current task and the last line
its command printed. The renderers turn a snapshot of it into text: a live
panel on a terminal, plain lines anywhere else. Every name, task and output line
is data (pctfleet.textout): printed as written, control codes made visible.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from pctfleet.run.observe import Observer, Tee
from pctfleet.status import SUCCESS
from pctfleet.textout import line

WAITING, RUNNING, DONE = "waiting", "in flight", "done"


@dataclass
class Slot:
    """One container as the display sees it."""

    key: str
    node: str
    plays: int = 1  # plays that select it: done after the last (or after a failure)
    state: str = WAITING
    finished_plays: int = 0
    status: str = ""
    started: float = 0.0  # monotonic, when its current play began
    spent: float = 0.0  # seconds of its plays that ended
    task: str = ""
    tail: str = ""  # the last line its running command printed (-v)


@dataclass
class Snapshot:
    slots: list[Slot]
    now: float
    parallel: int  # most containers seen in flight at once

    def count(self, state: str) -> int:
        return sum(1 for s in self.slots if s.state == state)

    def running(self) -> list[Slot]:
        """In-flight containers, longest-running first."""
        return sorted((s for s in self.slots if s.state == RUNNING), key=lambda s: s.started)


class Tracker(Observer):
    """A run's state, fed from worker threads; `snapshot()` is a consistent copy."""

    def __init__(
        self,
        containers: Iterable[tuple[str, str, int]],  # (key, node, plays that select it)
        clock: Callable[[], float] = time.monotonic,
        on_output: Callable[[str, str], None] | None = None,
    ) -> None:
        self.clock = clock
        self.slots = {key: Slot(key, node, plays) for key, node, plays in containers}
        self.lock = threading.Lock()
        self.parallel = 0
        self.running = 0  # counted as they go: a fleet of 10,000 is not re-read per event
        self.on_output = on_output  # (container, line) for each line it prints; None: not asked
        self._partial: dict[str, str] = {}

    def expect(self, containers: Iterable[tuple[str, str, int]]) -> None:
        """The containers to show, once they are known (a rollout's, after its playbook loads)."""
        with self.lock:
            self.slots = {key: Slot(key, node, plays) for key, node, plays in containers}
            self.running = 0

    def _slot(self, run: Any) -> Slot:
        return self.slots.setdefault(run.key, Slot(run.key, run.node))

    def container_started(self, run: Any) -> None:
        with self.lock:
            slot = self._slot(run)
            self.running += slot.state != RUNNING
            slot.state, slot.started, slot.task, slot.tail = RUNNING, self.clock(), "", ""
            self.parallel = max(self.parallel, self.running)

    def container_finished(self, run: Any) -> None:
        with self.lock:
            slot = self._slot(run)
            self.running -= slot.state == RUNNING
            slot.finished_plays += 1
            slot.spent += self.clock() - slot.started
            slot.status = str(run.status)
            over = slot.finished_plays >= slot.plays or run.status not in SUCCESS
            slot.state = DONE if over else WAITING
            slot.task = slot.tail = ""

    def task_started(self, run: Any, name: str) -> None:
        with self.lock:
            self._slot(run).task = name

    def streams(self, run: Any, hide: Callable[[str], str]) -> tuple[Tee | None, Tee | None]:
        if self.on_output is None:
            return None, None
        key = run.key
        return (
            Tee(lambda data: self.output(key, data, hide)),
            Tee(lambda data: self.output(key, data, hide)),
        )

    def output(self, key: str, data: bytes, hide: Callable[[str], str] = str) -> None:
        """A chunk a container's command printed: keep its last line, pass whole lines on.

        Only whole lines are shown, each through `hide`: a line still arriving may hold
        the first part of a secret that redaction cannot recognise yet."""
        text = self._partial.get(key, "") + data.decode("utf-8", errors="replace")
        # A progress bar redraws with a carriage return: each redraw is a line too.
        *complete, rest = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._partial[key] = rest[-4096:]
        shown = [line for c in complete if c.strip() and (line := hide(c)).strip()]
        with self.lock:
            latest = shown[-1] if shown else ""
            if latest:
                self._slot_by_key(key).tail = latest
        if self.on_output is not None:
            for text_line in shown:
                self.on_output(key, text_line)

    def _slot_by_key(self, key: str) -> Slot:
        return self.slots.setdefault(key, Slot(key, key.split("/")[0]))

    def snapshot(self) -> Snapshot:
        with self.lock:
            copies = [Slot(**vars(s)) for s in self.slots.values()]
        return Snapshot(copies, self.clock(), self.parallel)


# -- estimates and words --------------------------------------------------------------


def eta(snap: Snapshot) -> float | None:
    """Seconds left, from the durations of finished containers; None before the first."""
    done = [s.spent for s in snap.slots if s.state == DONE]
    if not done:
        return None
    mean = sum(done) / len(done)
    left = sum(mean for s in snap.slots if s.state == WAITING)
    left += sum(max(mean - (snap.now - s.started), 0.0) for s in snap.slots if s.state == RUNNING)
    return left / max(snap.parallel, 1)


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def total_line(snap: Snapshot) -> str:
    """`containers: 3/10 done, 2 in flight, 5 waiting; 1 failed; eta 40s`."""
    text = (
        f"containers: {snap.count(DONE)}/{len(snap.slots)} done, "
        f"{snap.count(RUNNING)} in flight, {snap.count(WAITING)} waiting"
    )
    problems = problem_counts(s.status for s in snap.slots if s.state == DONE)
    if problems:
        text += "; " + problems
    left = eta(snap)
    return text + (f"; eta {duration(left)}" if left is not None else "")


def problem_counts(statuses: Iterable[str]) -> str:
    """`2 failed, 1 unreachable`: every status that is not success, counted."""
    counts = Counter(s for s in statuses if s and s not in SUCCESS)
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def node_lines(snap: Snapshot, limit: int) -> list[str]:
    """A line per node with work in flight or a problem (at most `limit`, then how many more);
    nodes with problems first, so a long list never hides them."""
    nodes: dict[str, list[Slot]] = {}
    for slot in snap.slots:
        nodes.setdefault(slot.node, []).append(slot)
    troubled, busy = [], []
    for node, slots in nodes.items():
        states = Counter(s.state for s in slots)
        problems = problem_counts(s.status for s in slots if s.state == DONE)
        if not states[RUNNING] and not problems:
            continue
        text = (
            f"{node}: {states[DONE]} done, {states[RUNNING]} in flight, {states[WAITING]} waiting"
        )
        if problems:
            troubled.append(f"{text}; {problems}")
        else:
            busy.append(text)
    shown = troubled + busy
    if len(shown) > limit:
        return [*shown[:limit], f"... {len(shown) - limit} more node(s) busy or with problems"]
    return shown


def live_text(snap: Snapshot, tails: int = 0, nodes: int = 8, title: str = "") -> Text:
    """The panel on a terminal: a title (a rollout's batch), totals, busy or troubled nodes,
    the slowest container, and with -v the last line of the longest-running containers'
    commands."""
    rows = [line((title, "bold"))] if title else []
    rows.append(line((total_line(snap), "bold")))
    rows += [line("  ", text) for text in node_lines(snap, nodes)]
    running = snap.running()
    if running:
        slow = running[0]
        task = f" task '{slow.task}'" if slow.task else ""
        elapsed = duration(snap.now - slow.started)
        rows.append(line(("slowest: ", "dim"), f"{slow.key} {elapsed}{task}"))
    for slot in running[:tails]:
        if slot.tail:
            rows.append(line("  ", (f"{slot.key} | ", "dim"), _clip(slot.tail)))
    return Text("\n").join(rows)


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def node_problems(runs: Iterable[Any]) -> list[str]:
    """After a run: one line per node where containers failed or were not reached."""
    by_node: dict[str, list[str]] = {}
    for run in runs:
        by_node.setdefault(run.node, []).append(str(run.status))
    lines = []
    for node, statuses in by_node.items():
        problems = problem_counts(statuses)
        if problems:
            lines.append(f"node {node}: {problems} of {len(statuses)} container(s)")
    return lines


# -- showing it -----------------------------------------------------------------------


@dataclass
class Display:
    """Shows a tracker while a run goes: a live panel on a terminal, plain lines otherwise.

    Plain mode prints a total line every `every` seconds (none in a short run) and,
    with -v, each output line as `container | text`; never a control code.
    """

    console: Any  # rich Console, stderr
    tracker: Tracker
    live: bool
    tails: int = 0
    every: float = 30.0
    title: Callable[[], str] = str  # a line above the totals (a rollout's batch); "": none
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _live: Any = None

    def __enter__(self) -> Display:
        if self.live:
            from rich.live import Live

            self._live = Live(
                get_renderable=lambda: live_text(
                    self.tracker.snapshot(), self.tails, title=self.title()
                ),
                console=self.console,
                refresh_per_second=2,  # a frame of 10,000 containers takes ~20 ms
                transient=True,
            )
            self._live.__enter__()
        else:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._live is not None:
            self._live.__exit__(None, None, None)
        if self._thread is not None:
            self._thread.join(timeout=1)

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            title = self.title()
            text = total_line(self.tracker.snapshot())
            self.console.print(line(f"{title}: {text}" if title else text))

    def output_line(self, key: str, text: str) -> None:
        """-v without a terminal: each line a running command prints, prefixed."""
        if not self.live:
            self.console.print(line((f"  {key} | ", "dim"), _clip(text, 400)))


def terminal(console: Any, as_json: bool) -> bool:
    """A live panel only for a person at a terminal: not in pipes, CI, --json or TERM=dumb."""
    import os
    import sys

    if as_json or os.environ.get("CI") or console.is_dumb_terminal:
        return False
    return bool(console.is_terminal and sys.stdout.isatty())


def display_for(console: Any, plays: list, verbose: int = 0, as_json: bool = False) -> Display:
    """The display of a prepared run's `plays` ((play, containers) pairs); `verify` gives
    one pair of all its containers, `rollout` none (its tracker `expect`s them later)."""
    tracker = Tracker(play_counts(plays))
    display = Display(console, tracker, terminal(console, as_json), tails=3 if verbose else 0)
    if verbose:  # only then is the output of commands streamed at all
        tracker.on_output = display.output_line
    return display


def play_counts(plays: list) -> list[tuple[str, str, int]]:
    """(key, node, plays that select it) of each container of `plays`."""
    counts: Counter[str] = Counter()
    nodes: dict[str, str] = {}
    for _, containers in plays:
        for container in containers:
            counts[container.key] += 1
            nodes[container.key] = container.node.name
    return [(key, nodes[key], n) for key, n in counts.items()]


# -- a finished command over many containers -------------------------------------------

COMPACT_OVER = 10  # more containers than this: details only for those needing attention


def outcome_summary(outcomes: Iterable[Any], good: str, nodes: int = 20) -> list[str]:
    """`N container(s): 9 clean, 1 drift`, then a line per node with a container not `good`."""
    outcomes = list(outcomes)
    by_node: dict[str, Counter[str]] = {}
    for outcome in outcomes:
        node = outcome.container.split("/")[0]
        by_node.setdefault(node, Counter())[str(outcome.status)] += 1
    total = sum(by_node.values(), Counter())
    lines = [f"{len(outcomes)} container(s): {_counted(total, good)}"]
    troubled = [(n, c) for n, c in by_node.items() if set(c) - {good}]
    lines += [f"  {node}: {_counted(counts, good)}" for node, counts in troubled[:nodes]]
    if len(troubled) > nodes:
        lines.append(f"  ... {len(troubled) - nodes} more node(s) needing attention")
    if troubled and len(by_node) > len(troubled):
        lines.append(f"  {len(by_node) - len(troubled)} other node(s): all {good}")
    return lines


def _counted(counts: Counter[str], good: str) -> str:
    """The good status first, then the others by name."""
    order = [good, *sorted(s for s in counts if s != good)]
    return ", ".join(f"{counts[s]} {s}" for s in order if counts[s])
