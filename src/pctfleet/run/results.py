"""Results of a run: per task, per container, per run. The JSON shape is a contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pctfleet.jsonfields import json_fields
from pctfleet.status import UNREACHED, Status


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

    @property
    def changed(self) -> bool:
        return self.status == Status.CHANGED

    def as_json(self) -> dict:
        names = "name module status changed msg diff duration loc handler details"
        data = json_fields(self, names, digits=3)
        if self.rescued:
            data["rescued"] = True
        if self.items is not None:
            data["items"] = self.items
        return data


@dataclass
class ContainerRun:
    node: str
    ctid: int
    name: str | None = None
    status: Status = Status.OK  # ok, changed, failed, interrupted or one of UNREACHED
    message: str = ""
    remote_calls: int = 0  # calls into the container
    local_calls: int = 0  # delegated tasks' calls on this machine
    duration: float = 0.0
    tasks: list[TaskResult] = field(default_factory=list)
    extra_facts: dict[str, str] = field(default_factory=dict)
    started_at: float = 0.0  # wall clock, for journals: when its first task began
    finished_at: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.node}/{self.ctid}"

    def stats(self) -> dict[str, int]:
        counts = {"ok": 0, "changed": 0, "failed": 0, "skipped": 0, "rescued": 0}
        for task in self.tasks:
            # As Ansible's recap: a failure a block's rescue handled counts as rescued.
            counts["rescued" if task.rescued else task.status] += 1
        # Ansible counts a changed task as ok too; keep "ok" meaning "not failed, ran".
        counts["ok"] += counts["changed"]
        return counts

    def finish_status(self) -> None:
        if self.status in (*UNREACHED, Status.FAILED, Status.INTERRUPTED, Status.UNTOUCHED):
            return
        self.status = Status.CHANGED if any(t.changed for t in self.tasks) else Status.OK

    def as_json(self) -> dict:
        return json_fields(
            self,
            "node ctid name status message stats remote_calls local_calls "
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
