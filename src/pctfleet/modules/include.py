"""`include_tasks` and `include_role`: dynamic includes, expanded by the engine when
reached (see playbook/loader.py `expand_include`). As modules they only report."""

from __future__ import annotations

from dataclasses import dataclass

from pctfleet.modules.args import Args, arg
from pctfleet.modules.base import Module, Plan


def _text(value: object, where: str) -> str:
    return str(value)


@dataclass(frozen=True)
class IncludeTasksArgs(Args):
    file: str = arg(required=True, convert=_text)


@dataclass(frozen=True)
class IncludeRoleArgs(Args):
    name: str = arg(required=True, convert=_text)
    tasks_from: str = arg("main", convert=_text)
    vars_from: str = arg("main", convert=_text)
    defaults_from: str = arg("main", convert=_text)
    handlers_from: str = arg("main", convert=_text)
    allow_duplicates: bool = arg(True)
    public: bool = arg(False)


class IncludeTasks(Module, name="include_tasks", args=IncludeTasksArgs):
    """Tasks from a file whose name may be templated, loaded when reached."""

    controller = True

    def plan(self, args: IncludeTasksArgs, state: None, check: bool) -> Plan:
        return Plan(False, msg=f"included: {args.file}")


class IncludeRole(Module, name="include_role", args=IncludeRoleArgs):
    """A role loaded when reached (its name may be templated)."""

    controller = True

    def plan(self, args: IncludeRoleArgs, state: None, check: bool) -> Plan:
        return Plan(False, msg=f"included role: {args.name}")
