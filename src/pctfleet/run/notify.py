"""`notify` as ansible-core reads it when a task is reached: a name with `{{ }}` is
rendered with the task's variables (each loop item's, before that item runs); one
that renders to a list names each of its handlers. What it names must be a handler,
or the task fails before it runs (ansible-core stops the whole run there)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.playbook.templating import render

_MARKS = ("{{", "{%")


def templated(name: str) -> bool:
    return any(mark in name for mark in _MARKS)


def topics(handlers: Iterable[Any]) -> frozenset[str]:
    """Every name a notify may use: handlers' names (a role's also without "role : ")
    and their `listen` topics."""
    found: set[str] = set()
    for handler in handlers:
        found |= set(getattr(handler, "names", None) or {handler.name})
        found |= set(getattr(handler, "listen", ()))
    return frozenset(found)


def notes(names: Sequence[str], scope: dict, known: frozenset[str], where: str) -> list[str]:
    """The handler names `names` call in `scope`."""
    called: list[str] = []
    for name in names:
        if not templated(name):
            called.append(name)
            continue
        value = render(name, scope, where=where)
        for one in value if isinstance(value, list) else [value]:
            if str(one) not in known:
                listed = ", ".join(sorted(known)) or "none defined"
                raise PlaybookError(
                    f"notify {name!r} names {str(one)!r}, which is no handler (handlers: {listed})",
                    where=where,
                )
            called.append(str(one))
    return called
