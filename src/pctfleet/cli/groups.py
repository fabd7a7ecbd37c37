"""Option groups: a dataclass of `opt()` and `flag()` fields, each option declared once.

A field is one line, like pydantic's `Field`: its type, then its flags, help
and default, `venv: str | None = opt("--venv", "Serving venv.", shown="/opt/sglang")`.
A group's `panel` (a ClassVar) is the help panel all its options stand in.

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
from typing import Annotated, Any

import typer

KEYWORD = inspect.Parameter.KEYWORD_ONLY
OPTION = "pctfleet.option"  # the field metadata key opt() writes and Use reads


def opt(
    flags: str, text: str, default: Any = None, *, shown: str | None = None, **option: Any
) -> Any:
    """A group field: its flags ("--limit -l", in help order), help text and default.

    `shown` is the default as the help words it (typer's show_default); other
    keywords (min, max, count, hidden) go to typer.Option as they are.
    """
    if shown is not None:
        option["show_default"] = shown
    declared = (tuple(flags.split()), {"help": text, **option})
    return dataclasses.field(default=default, metadata={OPTION: declared})


def flag(flags: str, text: str, default: bool = False, **option: Any) -> Any:
    """A yes/no group field, off unless `default` says otherwise."""
    return opt(flags, text, default, **option)


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
                annotation=self._option(fields[name], hints[name]),
            )
            for name in self.names or fields
        ]

    def _option(self, item: dataclasses.Field, hint: Any) -> Any:
        """The field's type annotated with its typer.Option, as typer reads a parameter."""
        if OPTION not in item.metadata:
            raise TypeError(f"{self.group.__name__}.{item.name} is not declared with opt()")
        flags, option = item.metadata[OPTION]
        panel = getattr(self.group, "panel", None)
        return Annotated[hint, typer.Option(*flags, rich_help_panel=panel, **option)]


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
