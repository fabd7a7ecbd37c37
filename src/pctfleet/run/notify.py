"""`notify` as ansible-core reads it when a task is reached: a name with `{{ }}` is
rendered with the task's variables (each loop item's, before that item runs); one
that renders to a list names each of its handlers. What a changed task names must be
a handler, or the task fails (ansible-core stops the whole run there)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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


def notes(names: Sequence[str], scope: dict, where: str) -> list[str]:
    """The handler names `names` call in `scope` (an undefined variable is an error)."""
    called: list[str] = []
    for name in names:
        value = render(name, scope, where=where) if templated(name) else name
        called += [str(one) for one in value] if isinstance(value, list) else [str(value)]
    return called


def unknown(called: Sequence[str], known: frozenset[str]) -> str | None:
    """Why a changed task's notifications fail: a name that is no handler (ansible-core
    looks handlers up only for a changed result); None when every one is."""
    missing = [name for name in called if name not in known]
    if not missing:
        return None
    listed = ", ".join(sorted(known)) or "none defined"
    return f"notify names {missing[0]!r}, which is no handler (handlers: {listed})"
