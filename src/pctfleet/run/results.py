"""Results of a run: per task, per container, per run. The JSON shape is a contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pctfleet.jsonfields import json_fields
from pctfleet.status import UNREACHED, Status

INCLUDES = ("include_tasks", "include_role")


@dataclass
class TaskResult:
    name: str
    module: str
    status: Status  # ok | changed | failed | skipped
    msg: str = ""
    diff: dict | None = None
    duration: float = 0.0
    loc: str = ""
    handler: bool = False
    result: dict[str, Any] = field(default_factory=dict)
    # What the module itself reports beyond its message (a server's pid, manager, the
    # processes it stopped; the doctor's findings): its plan's result, redacted.
    details: dict[str, Any] = field(default_factory=dict)
    # A looped task: one entry per item ({item, status, changed, msg}); None without a loop.
    items: list[dict[str, Any]] | None = None
    rescued: bool = False  # failed inside a block whose `rescue` then ran
    ignored: bool = False  # failed with ignore_errors: the run went on
    # A failed task's rc, stdout/stderr tails and known cause (see failure.py); {} otherwise.
    failure: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.status == Status.CHANGED

    def recap(self) -> list[str]:
        """The counters Ansible's recap adds this task to ("ok" includes "changed")."""
        if self.module == "meta":  # a meta skipped by its `when` is listed, never counted
            return []
        if self.rescued:
            return ["rescued"]
        if self.ignored:  # Ansible: ok and ignored, and changed if the failed result says so
            return ["ok", "ignored"] + (["changed"] if self.result.get("changed") else [])
        if self.status == Status.CHANGED:
            return ["ok", "changed"]
        if self.status == Status.OK and self.module in INCLUDES and self.items:
            # Ansible counts an include once per file it brought in: per item that ran.
            return ["ok"] * sum(1 for item in self.items if item["status"] != Status.SKIPPED)
        return [str(self.status)]

    def as_json(self) -> dict:
        names = "name module status changed msg diff duration loc handler details"
        data = json_fields(self, names, digits=3)
        if self.rescued:
            data["rescued"] = True
        if self.ignored:
            data["ignored"] = True
        if self.items is not None:
            data["items"] = self.items
        return data | self.failure


@dataclass
class ContainerRun:
    node: str
    ctid: int
    name: str | None = None
    status: Status = Status.OK  # ok, changed, failed, interrupted or one of UNREACHED
    message: str = ""
    remote_calls: int = 0  # calls into the container
    remote_reruns: int = 0  # calls sent a second time (pct died before the command started)
    local_calls: int = 0  # delegated tasks' calls on this machine
    duration: float = 0.0
    tasks: list[TaskResult] = field(default_factory=list)
    extra_facts: dict[str, str] = field(default_factory=dict)
    # Wall clock, for journals: when its first play began and its last ended; None
    # where none did (a later batch never started), never a made-up 0.
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def key(self) -> str:
        return f"{self.node}/{self.ctid}"

    def stats(self) -> dict[str, int]:
        counts = {"ok": 0, "changed": 0, "failed": 0, "skipped": 0, "rescued": 0, "ignored": 0}
        for task in self.tasks:
            for key in task.recap():
                counts[key] += 1
        return counts

    def finish_status(self) -> None:
        if self.status in (*UNREACHED, Status.FAILED, Status.INTERRUPTED, Status.UNTOUCHED):
            return
        self.status = Status.CHANGED if any(t.changed for t in self.tasks) else Status.OK

    def as_json(self) -> dict:
        return json_fields(
            self,
            "node ctid name status message stats remote_calls remote_reruns local_calls "
            "duration started_at finished_at tasks",
            digits=3,
            stats=self.stats(),
        )


def summary(runs: list[ContainerRun]) -> dict[str, int]:
    counts = {"containers": len(runs), "ok": 0, "changed": 0, "failed": 0, "interrupted": 0}
    for status in UNREACHED:
        counts[str(status)] = 0
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    return counts
