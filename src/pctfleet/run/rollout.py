"""Rolling a playbook across a fleet in batches, with a health gate between batches.

Every rollout has an id and a journal (JSON lines). When it stops (a failed
container, failures over --max-fail-percent, a failed gate, Ctrl-C), containers
not yet reached are left untouched, and `--resume ID` continues with them later.

When a batch stops the rollout (`stop_reason`): by default any container that
failed or was unreachable, as a canary is meant to; with --max-fail-percent P,
more than P% of the batch, or every container of it (as Ansible stops a play
whose whole batch failed, whatever its max_fail_percentage); with
--any-errors-fatal, the first failure, which also ends the batch itself.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pctfleet.jsonfields import json_fields
from pctfleet.run.batches import order_containers, plan_batches
from pctfleet.run.engine import RunOptions
from pctfleet.run.journal import Journal, read
from pctfleet.run.playbookrun import PreparedRun, RunRequest, execute, prepare
from pctfleet.run.results import ContainerRun
from pctfleet.run.signals import sigterm_as_interrupt
from pctfleet.status import SUCCESS, Status, exit_code
from pctfleet.transport.options import ConnectOptions

DEFAULT_DIR = Path("~/.local/state/pctfleet/rollouts")

# A gate takes the batch's containers and says, per container key, (passed, why).
Gate = Callable[[list], dict[str, tuple[bool, str]]]


@dataclass
class RolloutPlan:
    playbook: Path
    inventory: Any
    inventory_path: str
    containers: list
    connect: ConnectOptions
    options: RunOptions
    serial: list[str]
    max_fail_percent: float | None = None
    any_errors_fatal: bool = False
    per_node: int | None = None
    order: str = "spread"
    forks: int | None = None


@dataclass
class RolloutResult:
    rollout_id: str
    journal: Path
    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    untouched: list[str] = field(default_factory=list)
    batches: list[list[str]] = field(default_factory=list)
    stopped: str = ""  # why the rollout stopped early, "" when it completed
    runs: dict[str, ContainerRun] = field(default_factory=dict)

    def statuses(self) -> list[Status]:
        """The outcome for the exit-code policy: each container's, and why it stopped."""
        return end_statuses(self.done, self.failed, self.stopped)

    @property
    def outcome(self) -> str:
        """completed (every container done), failures (every batch ran, some failed:
        --max-fail-percent let them), stopped or interrupted."""
        if self.stopped:
            return "interrupted" if self.stopped == Status.INTERRUPTED else "stopped"
        return "failures" if self.failed else "completed"

    @property
    def exit_code(self) -> int:
        return exit_code("rollout", self.statuses())

    def as_json(self) -> dict:
        names = "rollout_id journal batches done failed untouched stopped completed"
        return json_fields(
            self,
            names + " outcome exit_code",
            journal=str(self.journal),
            # True exactly when the exit code is 0: nothing failed, nothing left to resume.
            completed=self.outcome == "completed",
        )


def end_statuses(done: list, failed: list, stopped: str | None) -> list[Status]:
    """A rollout's statuses for the exit-code policy, from its end record's lists."""
    words = [Status.OK] * len(done) + [Status.FAILED] * len(failed)
    if stopped:
        words.append(Status.INTERRUPTED if stopped == Status.INTERRUPTED else Status.FAILED)
    return words


class Rollout:
    """Runs the plan batch by batch; `on_event` sees every journal record as it happens."""

    def __init__(
        self,
        plan: RolloutPlan,
        journal: Journal,
        gate: Gate | None,
        on_event: Callable[[dict], None] = lambda event: None,
    ) -> None:
        self.plan = plan
        self.journal = journal
        self.gate = gate
        self.on_event = on_event
        self.stop = threading.Event()
        self.result = RolloutResult(journal.run_id, journal.path)
        # Sees the loaded plays of what is left to do (a progress display sizes itself by them).
        self.on_prepared: Callable[[PreparedRun], None] = lambda prepared: None

    def event(self, kind: str, **data: Any) -> None:
        self.journal.write(kind, **data)
        self.on_event({"kind": kind, **data})

    def run(self, already_done: list[str] | None = None) -> RolloutResult:
        plan, result = self.plan, self.result
        result.done = list(already_done or [])
        todo = [
            c for c in order_containers(plan.containers, plan.order) if c.key not in result.done
        ]
        prepared = prepare(self._request(todo))
        # A container no play matches is no part of the rollout: never counted done.
        matched = {c.key for c in prepared.containers}
        todo = [c for c in todo if c.key in matched]
        batches = plan_batches(todo, plan.serial)
        result.batches = [[c.key for c in batch] for batch in batches]
        self.event("rollout-plan", batches=result.batches, done=result.done)
        self.on_prepared(prepared)
        try:
            for index, batch in enumerate(batches, start=1):
                if self.stop.is_set() or not self._batch(index, len(batches), batch, prepared):
                    break
        except KeyboardInterrupt:
            # Running tasks were let finish; what ran is recorded, the rest stays untouched.
            self.stop.set()
            result.stopped = Status.INTERRUPTED
            self.event("rollout-stop", reason=Status.INTERRUPTED)
        touched = set(result.done) | set(result.failed)
        result.untouched = [c.key for c in todo if c.key not in touched]
        self.event("rollout-end", **json_fields(result, "done failed untouched stopped"))
        return result

    def run_journaled(self, already_done: list[str] | None = None) -> RolloutResult:
        """`run`, with SIGTERM stopping it like Ctrl-C; the journal is closed either way."""
        try:
            with sigterm_as_interrupt():
                return self.run(already_done)
        finally:
            self.journal.close()

    def _request(self, containers: list) -> RunRequest:
        plan = self.plan
        return RunRequest(
            plan.playbook,
            plan.inventory,
            containers,
            plan.connect,
            plan.options,
            plan.forks,
            self.stop,
            plan.per_node,
        )

    def _batch(self, index: int, total: int, batch: list, prepared: Any) -> bool:
        """Run one batch; False when the rollout must stop here."""
        keys = [c.key for c in batch]
        self.event("batch-start", batch=index, of=total, containers=keys)
        request = self._request(batch)
        fatal = self.plan.any_errors_fatal
        plays = [
            # A play under any_errors_fatal ends for the whole batch at its first failure.
            (
                replace(play, any_errors_fatal=True) if fatal else play,
                [c for c in members if c.key in keys],
            )
            for play, members in prepared.plays
        ]
        runs = execute(PreparedRun(request, plays), self.journal, self._task_event)
        for run in runs:
            self.result.runs[run.key] = run
            names = "container status message started_at finished_at remote_calls remote_reruns"
            self.event("container", **json_fields(run, names, container=run.key))
        failed = [r.key for r in runs if r.status not in SUCCESS]
        # Its batch-mates stopped before their next task (their status stays ok): as
        # ansible-core fails the whole batch, none of them counts as done.
        stopped_with = [k for k in keys if k not in failed] if failed and fatal else []
        passed = [r for r in batch if r.key not in failed and r.key not in stopped_with]
        gate_failed = self._gate(index, passed)
        self.result.done += [c.key for c in passed if c.key not in gate_failed]
        self.result.failed += failed + stopped_with + gate_failed
        return self._keep_going(index, len(batch), failed, gate_failed)

    def _task_event(self, run: ContainerRun, task: Any) -> None:
        self.on_event(
            {"kind": "task", "container": run.key, "name": task.name, "status": task.status}
        )

    def _gate(self, index: int, containers: list) -> list[str]:
        if self.gate is None or not containers or self.stop.is_set():
            return []
        verdicts = self.gate(containers)
        failing = [key for key, (ok, _) in verdicts.items() if not ok]
        self.event(
            "gate",
            batch=index,
            passed=not failing,
            results={k: {"passed": ok, "message": why} for k, (ok, why) in verdicts.items()},
        )
        return failing

    def _keep_going(self, index: int, size: int, failed: list, gate_failed: list) -> bool:
        self.result.stopped = self.stop_reason(index, size, failed, gate_failed)
        if self.result.stopped:
            self.event("rollout-stop", batch=index, reason=self.result.stopped)
        return not self.result.stopped

    def stop_reason(self, index: int, size: int, failed: list, gate_failed: list) -> str:
        """Why the rollout stops after batch `index` (`failed`: its containers that failed
        or were unreachable, of `size`), or "" to go on."""
        plan = self.plan
        if self.stop.is_set():
            return Status.INTERRUPTED
        if gate_failed:
            return f"health gate failed after batch {index}: {', '.join(gate_failed)}"
        if not failed:
            return ""
        names = ", ".join(failed)
        if plan.any_errors_fatal:
            return f"batch {index}: {names} failed (--any-errors-fatal)"
        if plan.max_fail_percent is None:
            return f"batch {index}: {names} failed"
        if len(failed) >= size:
            return f"batch {index}: every container failed ({names})"
        if 100.0 * len(failed) / size > plan.max_fail_percent:
            return (
                f"batch {index}: {len(failed)}/{size} failed, over "
                f"--max-fail-percent {plan.max_fail_percent:g}"
            )
        return ""


def journal_path(directory: Path | None, rollout_id: str) -> Path:
    return Path(directory or DEFAULT_DIR).expanduser() / f"{rollout_id}.jsonl"


def resume_state(path: Path) -> tuple[dict, list[str]]:
    """The rollout's original parameters and the containers it finished."""
    records = read(path)
    start = next((r for r in records if r["kind"] == "rollout-start"), None)
    if start is None:
        raise FileNotFoundError(f"{path} is not a rollout journal")
    done: dict[str, None] = {}
    for record in records:  # a container is done once it succeeded and passed its gate
        if record["kind"] == "rollout-plan":
            done.update(dict.fromkeys(record["done"]))
        elif record["kind"] == "container" and record["status"] in SUCCESS:
            done[record["container"]] = None
        elif record["kind"] == "gate":
            for key, verdict in record["results"].items():
                if not verdict["passed"]:
                    done.pop(key, None)
    return start, list(done)


def write_start(journal: Journal, plan: RolloutPlan, argv: dict) -> None:
    journal.write(
        "rollout-start",
        playbook=str(plan.playbook),
        inventory=plan.inventory_path,
        params=argv,
        started=time.time(),
        command="rollout",
        pid=os.getpid(),  # `runs` tells a live rollout from one whose process is gone
    )


def write_resume(journal: Journal) -> None:
    """A resume appends to the rollout's journal: this process is now the one writing it."""
    journal.write("rollout-resume", pid=os.getpid(), started=time.time())
