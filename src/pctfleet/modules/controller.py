"""Modules that run on the controller only: they cost no remote call."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from pctfleet.modules.args import Args, Context, arg
from pctfleet.modules.base import Module, Plan
from pctfleet.playbook.templating import render


def _shown(value: Any, where: str) -> str:
    """Any value as the text a message prints (a list or a number too)."""
    return str(value)


@dataclass(frozen=True)
class DebugArgs(Args):
    msg: str = arg("Hello world!", convert=_shown)
    var: str | None = arg(None, convert=_shown)
    # Not an argument: `var` evaluated with the task's variables when it is prepared.
    value: Any = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        if args.var is None:
            return args
        value = render("{{ " + args.var + " }}", ctx.variables, where=where)
        return dataclasses.replace(args, value=value)


class Debug(Module, name="debug", args=DebugArgs):
    """Print a message or a variable: `debug: {msg: "..."}` or `debug: {var: result}`."""

    controller = True

    def plan(self, args: DebugArgs, state: None, check: bool) -> Plan:
        if args.var is not None:
            return Plan(False, msg=f"{args.var} = {args.value!r}")
        return Plan(False, msg=args.msg)


@dataclass(frozen=True)
class SetFactArgs(Args):
    free_names: ClassVar[bool] = True


class SetFact(Module, name="set_fact", args=SetFactArgs):
    """Set variables for the later tasks of this container."""

    controller = True

    def plan(self, args: SetFactArgs, state: None, check: bool) -> Plan:
        # A `_`-prefixed name stays internal: it never becomes a variable of later tasks.
        facts = {k: v for k, v in args.extra.items() if not k.startswith("_")}
        return Plan(False, result={"ansible_facts": facts})

    def after(self, registered: dict[str, Any], variables: dict[str, Any]) -> None:
        variables.update(registered.get("ansible_facts", {}))


@dataclass(frozen=True)
class FailArgs(Args):
    msg: str = arg("Failed as requested", convert=_shown)


class Fail(Module, name="fail", args=FailArgs):
    """Stop this container's run with a message."""

    controller = True

    def plan(self, args: FailArgs, state: None, check: bool) -> Plan:
        return Plan(False, failed=True, msg=args.msg)
