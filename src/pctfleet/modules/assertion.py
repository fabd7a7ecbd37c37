"""`assert`: conditions, evaluated on the controller like `when`; the first false one fails."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import jinja2

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, flag
from pctfleet.modules.base import Module, Plan
from pctfleet.playbook.templating import condition, names_reached, syntax_problem


def _conditions(value: Any, where: str) -> tuple[Any, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    for item in items:
        problem = syntax_problem(item, expression=True) if isinstance(item, str) else None
        if problem:
            raise PlaybookError(f"assert: bad condition {item!r}: {problem}", where=where)
    return tuple(items)


def _shown(value: Any, where: str) -> str:
    return str(value)


@dataclass(frozen=True)
class AssertArgs(Args):
    reads_context: ClassVar[bool] = True
    that: tuple[Any, ...] = arg((), required=True, convert=_conditions)
    fail_msg: str | None = arg(None, aliases=("msg",), convert=_shown)
    success_msg: str | None = arg(None, convert=_shown)
    quiet: bool = arg(False, convert=flag)
    # Not an argument: the first condition found false (None: all held), when prepared.
    failing: Any = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        if waits_for_run(args.that, ctx.variables):
            return args  # reads a result not known before the run: judged when reached
        for item in args.that:
            if not condition(item, ctx.variables, where=where):
                return dataclasses.replace(args, failing=item)
        return args


def waits_for_run(conditions: tuple[Any, ...], variables: Mapping[str, Any]) -> bool:
    """Whether a condition reads a stand-in for a value known only at run time."""
    names = names_reached(list(conditions), variables, expression=True)
    return any(isinstance(variables.get(name), jinja2.Undefined) for name in names)


class Assert(Module, name="assert", args=AssertArgs):
    """Fail with `fail_msg` unless every condition in `that` holds."""

    registers_output = False

    controller = True

    def plan(self, args: AssertArgs, state: None, check: bool) -> Plan:
        if args.failing is not None:
            msg = args.fail_msg or "Assertion failed"
            result = {"evaluated_to": False, "assertion": args.failing}
            return Plan(False, failed=True, msg=msg, result=result)
        return Plan(False, msg=args.success_msg or "All assertions passed")
