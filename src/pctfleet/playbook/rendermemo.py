"""Rendered results shared between containers, for templates that are pure functions.

A fleet renders the same task text once per container, and most of those texts
(`"{{ venv }}/bin/python"`, `"{{ server_port | string }}"`) give the same result
wherever the variables they read hold the same values. A template qualifies only
when jinja's syntax tree has nothing but names, constants, operators, `if` and
the filters and tests below (no call, no loop, no lookup, nothing that reads the
clock, the controller's files or randomness), every variable it reads holds a
plain scalar, and its result is one too: then the text and those values decide
the result, and a second container with the same values reuses it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2 import meta, nodes

SCALARS = (str, int, float, bool, type(None))
PURE_FILTERS = frozenset((
    "string", "int", "float", "bool", "lower", "upper", "trim", "replace", "default", "d",
    "basename", "dirname", "quote", "join", "length", "count", "b64encode", "b64decode",
    "regex_replace", "regex_escape", "capitalize", "title", "abs", "round", "truncate",
    "indent", "center", "to_json", "to_yaml", "splitext",
))  # fmt: skip
PURE_TESTS = frozenset((
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean",
    "true", "false", "eq", "equalto", "ne", "lt", "gt", "le", "ge", "in", "match", "search",
    "regex", "version", "version_compare", "truthy", "falsy", "lower", "upper",
))  # fmt: skip
_PURE_NODES = (
    nodes.Template, nodes.Output, nodes.TemplateData, nodes.Name, nodes.Const,
    nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Test, nodes.Concat, nodes.Compare,
    nodes.Operand, nodes.CondExpr, nodes.If, nodes.And, nodes.Or, nodes.Not, nodes.Neg,
    nodes.Pos, nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod,
    nodes.Tuple, nodes.List,
)  # fmt: skip
LIMIT = 100_000  # entries before the table starts again: bounded memory on any fleet
_MISS = object()
_table: dict[tuple, Any] = {}
_lock = threading.Lock()


@functools.lru_cache(maxsize=8192)
def pure_names(env: jinja2.Environment, text: str) -> frozenset[str] | None:
    """The variables a pure template reads; None when the template is not pure."""
    try:
        tree = env.parse(text)
    except (jinja2.TemplateSyntaxError, RecursionError):
        return None
    for node in tree.find_all(nodes.Node):
        if not isinstance(node, _PURE_NODES):
            return None
        if isinstance(node, nodes.Filter) and node.name not in PURE_FILTERS:
            return None
        if isinstance(node, nodes.Test) and node.name not in PURE_TESTS:
            return None
    return frozenset(meta.find_undeclared_variables(tree))


def scalar_key(value: Any) -> tuple:
    """A scalar as a key part: its type and value, a float by its exact bits (`-0.0`
    equals `0.0` and hashes alike, yet renders otherwise)."""
    kind = type(value)
    return (kind, value.hex() if kind is float else value)


def memo_key(env: jinja2.Environment, text: str, variables: Mapping[str, Any]) -> tuple | None:
    """What decides a pure template's result, or None when the memo must not be used."""
    names = pure_names(env, text)
    if names is None:
        return None
    values = []
    for name in sorted(names):
        try:
            value = variables[name]
        except Exception:  # undefined or failing: the normal path reports it
            return None
        if type(value) not in SCALARS:
            return None
        values.append((name, *scalar_key(value)))
    return (id(env), text, tuple(values))


def rendered(key: tuple | None, render: Callable[[], Any]) -> Any:
    """`render()`, or the result an identical key gave before."""
    if key is None:
        return render()
    found = _table.get(key, _MISS)
    if found is not _MISS:
        return found
    result = render()
    if type(result) in SCALARS:
        with _lock:
            if len(_table) >= LIMIT:
                _table.clear()
            _table[key] = result
    return result
