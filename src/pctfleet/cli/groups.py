"""Option groups: a dataclass of `Annotated[..., typer.Option(...)]` fields, declared once.

`@grouped(conn=Connection, sel=Selection)` puts a group's fields in the command's
signature where its parameter stands (typer reads `inspect.signature`, which
honours `__signature__`), and calls the command with one instance per group.
`use(Group, "a", "b", c=1)` takes only fields a and b, in that order, and gives
c another default; a field left out gets its dataclass default. A group the
signature does not name goes where its `**rest` stands (in decorator order) and
reaches the command inside `rest`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

KEYWORD = inspect.Parameter.KEYWORD_ONLY


@dataclasses.dataclass(frozen=True)
class Use:
    group: type
    names: tuple[str, ...] = ()
    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)

    def parameters(self) -> list[inspect.Parameter]:
        hints = typing.get_type_hints(self.group, include_extras=True)
        fields = {f.name: f for f in dataclasses.fields(self.group)}
        unknown = set(self.names) - set(fields)
        if unknown or set(self.defaults) - set(fields):
            raise TypeError(f"{self.group.__name__} has no field {sorted(unknown)}")
        return [
            inspect.Parameter(
                name,
                KEYWORD,
                default=self.defaults.get(name, fields[name].default),
                annotation=hints[name],
            )
            for name in self.names or fields
        ]


def use(group: type, *names: str, **defaults: Any) -> Use:
    return Use(group, names, defaults)


def grouped(**groups: type | Use) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    uses = {name: g if isinstance(g, Use) else Use(g) for name, g in groups.items()}

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        own = inspect.signature(command, eval_str=True)
        fields = {name: u.parameters() for name, u in uses.items()}
        params: list[inspect.Parameter] = []
        unnamed = [p for name in uses if name not in own.parameters for p in fields[name]]
        for param in own.parameters.values():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                params.extend(unnamed)
            else:
                params.extend(fields[param.name] if param.name in uses else [param])

        @functools.wraps(command)
        def wrapper(**given: Any) -> Any:
            for name, u in uses.items():
                picked = {p.name: given.pop(p.name) for p in fields[name]}
                given[name] = u.group(**picked)
            return command(**given)

        wrapper.__signature__ = own.replace(parameters=_keyword_only(params))  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _keyword_only(params: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """Keyword-only, so a field with a default may precede an argument without one."""
    return [p.replace(kind=KEYWORD) for p in params]
