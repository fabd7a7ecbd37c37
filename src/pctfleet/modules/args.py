"""Typed module arguments: one frozen dataclass per module, built once per task.

A task's rendered arguments (a dict from YAML and jinja2) become an instance
of the module's `Args` class here: unknown names, missing values and bad
choices are `PlaybookError`s naming the task, and nothing after this point
handles a raw dict. Ansible's aliases (`dest` for `path`) and conversions
(`mode: 644`) are declared on the field, not coded in each module:

    @dataclass(frozen=True)
    class FileArgs(Args):
        path: str = arg(required=True, aliases=("dest", "name"))
        state: str = arg("file", choices=STATES)
        mode: str | None = arg(None, convert=mode_string)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from pctfleet.errors import PlaybookError, brief


@dataclass(frozen=True)
class Context:
    """What a task's arguments may need besides themselves."""

    base_dir: str = "."  # the playbook's folder: where `src` files and templates are found
    variables: Mapping[str, Any] = dataclasses.field(default_factory=dict)


_MISSING = object()


def arg(
    default: Any = None,
    *,
    required: bool = False,
    aliases: tuple[str, ...] = (),
    choices: Any = None,
    convert: Callable[[Any, str], Any] | None = None,
) -> Any:
    """A module argument: its default, other names, allowed values and converter.

    `convert(value, where)` turns the YAML value into the field's type and
    raises `PlaybookError` for a bad one; it is not called for a missing value.
    """
    meta = {"aliases": aliases, "choices": choices, "convert": convert, "required": required}
    meta["argument"] = True
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Args:
    """Base of every module's arguments. Subclasses are frozen dataclasses of `arg()`s."""

    module: ClassVar[str] = ""  # set from the module's `name` when the module is defined
    # A module whose arguments are free names (set_fact) keeps them all in `extra`.
    free_names: ClassVar[bool] = False
    # Whether parsing reads the task's variables or the controller's files (not only the
    # rendered arguments and the playbook's folder): such arguments are parsed anew each time.
    reads_context: ClassVar[bool] = False
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def names(cls) -> set[str] | None:
        """Every argument name a playbook may write (None: any name)."""
        if cls.free_names:
            return None
        found: set[str] = set()
        for item in _arguments(cls):
            found.update((item.name, *item.metadata.get("aliases", ())))
        return found

    @classmethod
    def context_key(
        cls, raw: Mapping[str, Any], variables: Mapping[str, Any], base_dir: str
    ) -> tuple[frozenset[str], tuple] | None:
        """What parsing the task's arguments `raw` (as written) reads besides their
        rendered values, told before they are parsed: the variables it reads and a key
        for the controller's files; None when that cannot be told (parsed anew each time)."""
        return None if cls.reads_context else (frozenset(), ())

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        """The typed arguments of one task; every problem is a one-line PlaybookError."""
        given = dict(raw)
        values: dict[str, Any] = {}
        for item in _arguments(cls):
            value = _take(given, item)
            values[item.name] = _checked(cls.module, item, value, where)
        if cls.free_names:
            values["extra"] = given
        elif given:
            name = next(iter(given))
            raise PlaybookError(f"{cls.module}: unknown argument {name!r}", where=where)
        parsed = cls(**values)
        parsed.check(ctx, where)
        return parsed

    def check(self, ctx: Context, where: str) -> None:
        """Rules that tie arguments together (`state: link` needs `src`). Default: none."""

    def fail(self, message: str, where: str) -> PlaybookError:
        return PlaybookError(f"{self.module}: {message}", where=where)


@functools.cache
def _arguments(cls: type[Args]) -> tuple[dataclasses.Field, ...]:
    """The fields a playbook writes: `arg()`s, not `extra` or values a module derives.
    Once per class: every task of every container parses its arguments."""
    return tuple(item for item in dataclasses.fields(cls) if item.metadata.get("argument"))


def _take(given: dict[str, Any], item: dataclasses.Field) -> Any:
    """The value under the field's name or its first alias given; removed from `given`."""
    value = _MISSING
    for name in (item.name, *item.metadata.get("aliases", ())):
        if name in given:
            found = given.pop(name)
            if value is _MISSING or value in (None, ""):
                value = found
    return value


def _checked(module: str, item: dataclasses.Field, value: Any, where: str) -> Any:
    meta = item.metadata
    if value is _MISSING or value is None or (value == "" and meta.get("required")):
        if meta.get("required"):
            raise PlaybookError(f"module '{module}' needs '{item.name}'", where=where)
        return item.default
    if meta.get("convert"):
        value = meta["convert"](value, where)
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise PlaybookError(
            f"{module}: {item.name!r} must be one of {sorted(choices)}, got {brief(value)}",
            where=where,
        )
    return value


def text(value: Any, where: str) -> str:
    """A scalar as text (YAML may have read `name: 1.0` as a float)."""
    if isinstance(value, dict | list):
        raise PlaybookError(f"expected a single value, got {brief(value)}", where=where)
    return str(value)


def text_list(value: Any, where: str) -> tuple[str, ...]:
    """`a` or `[a, b]` as a tuple of strings."""
    items = value if isinstance(value, list | tuple) else [value]
    return tuple(text(item, where) for item in items)


def flag(value: Any, where: str) -> bool:
    """Ansible's booleans: yes/no, true/false, on/off, 1/0."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word not in {"yes", "true", "1", "on", "no", "false", "0", "off", ""}:
            raise PlaybookError(f"expected a boolean, got {brief(value)}", where=where)
        return word in {"yes", "true", "1", "on"}
    return bool(value)
