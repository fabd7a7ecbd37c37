"""Where a task runs and in which mode: delegated tasks and per-task check/diff.

A delegated task (`delegate_to: localhost`, `local_action`) reads its facts and
applies its change on this machine, through its own probe per task. It never
joins the container's probe and never takes the container's run lock, so a
converged play still costs one remote call per container; the controller's
calls are counted apart.
"""

from __future__ import annotations

from typing import Any

from pctfleet.facts import script as probe
from pctfleet.modules.base import Fact
from pctfleet.transport.base import Target
from pctfleet.transport.local import LocalTarget


def delegated(task: Any) -> bool:
    """Whether the task runs on the controller (the loader allows no other host)."""
    return bool(getattr(task, "delegate_to", None))


class Controller:
    """This machine, as delegated tasks see it. Opened on first use."""

    def __init__(self, target: Target | None = None) -> None:
        self._target = target

    @property
    def target(self) -> Target:
        if self._target is None:
            self._target = LocalTarget("localhost")
        return self._target

    @property
    def calls(self) -> int:
        return self._target.calls if self._target is not None else 0

    def fact(self, snippet: str) -> Fact:
        """One task's reading, in its own local round trip."""
        return probe.run_probe(self.target, {"delegated": snippet}).get("delegated", Fact("", 1))
