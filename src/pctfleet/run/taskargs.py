"""A task's typed arguments, rendered and parsed once per distinct input across the fleet.

Preflight renders and parses every task for every container, and the engine does it
again when the task runs. Most tasks read only play variables (`{{ venv }}/bin/python`)
that every container shares, and a task reading a per-container value gets the same
value in preflight and in the engine. So the result is kept under what decides it:
the task, the playbook's folder, and each variable its templates reach (directly or
through the variables they read), a scalar by its type and value, anything else by
identity (the entry holds it, so its id stays its own).

Kept only when that is all that decides it: every template reached is pure
(`rendermemo.pure_names`: no call, lookup or impure filter), what the module's
parsing reads besides its arguments can be told in advance (`Args.context_key`: the
variables a template file reads, a controller file by its stat), and `delegate_to` is
not templated. A failure is never kept: it is raised again,
with its own `where`, for each container.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.playbook import rendermemo
from pctfleet.playbook.delegation import check_rendered
from pctfleet.playbook.loader import keyword_templates
from pctfleet.playbook.loops import WITH_EFFECTS
from pctfleet.playbook.magic import drop_omitted
from pctfleet.playbook.rendermemo import scalar_key
from pctfleet.playbook.templatevars import UNSTABLE
from pctfleet.playbook.templating import (
    _ENV,
    names_reached,
    names_through,
    referenced_names,
    render,
)

LIMIT = 100_000  # entries before the table starts again: bounded memory on any fleet
_SCALARS = frozenset({str, int, float, bool, type(None)})
_MISSING = object()
_IMPURE = object()
_table: dict[tuple, tuple[Any, tuple]] = {}
_walks: dict[int, tuple[Any, Any]] = {}  # id(value) -> (value, its names or _IMPURE)
_lock = threading.Lock()


def task_args(task: Any, scope: Mapping[str, Any], base_dir: str, where: str) -> Any:
    """The task's typed arguments for `scope`: delegate_to checked, args rendered,
    `omit` dropped, parsed by the module (a PlaybookError or TemplateError naming `where`)."""
    key, keep = _key(task, scope, base_dir)
    if key is not None:
        found = _table.get(key)
        if found is not None:
            return found[0]
    check_rendered(task, scope, where)
    raw = drop_omitted(render(dict(task.args), scope, where=where))
    args = REGISTRY[task.module].prepare(raw, Context(base_dir, scope), where)
    if key is not None:
        with _lock:
            if len(_table) >= LIMIT:
                _table.clear()
                _walks.clear()
            _table[key] = (args, keep)
    return args


def forget() -> None:
    """Drop what the tables hold (a run's values, its secrets among them) once it is over."""
    with _lock:
        _table.clear()
        _walks.clear()


def _key(task: Any, scope: Mapping[str, Any], base_dir: str) -> tuple[tuple | None, tuple]:
    """What decides the task's arguments in `scope`, and the objects the key names by id;
    (None, ()) when something else may decide them too."""
    module = REGISTRY.get(task.module)
    written = getattr(task, "delegate_to", None)
    if module is None or (written and "{" in str(written)):
        return None, ()
    todo = _names(task.args)  # walked once: the task's args are the same object every time
    if todo is _IMPURE:
        return None, ()
    context = module.Args.context_key(task.args, scope, base_dir)
    if context is None:
        return None, ()
    todo, seen, parts, keep = [*todo, *context[0]], set(), [], [task]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in UNSTABLE:  # read through a variable too: new at every render
            return None, ()
        value = scope.get(name, _MISSING)
        reads = _names(value)
        if reads is _IMPURE:
            return None, ()
        todo.extend(reads)
        if type(value) in _SCALARS:
            parts.append((name, *scalar_key(value)))
        else:
            parts.append((name, id(value)))
            keep.append(value)
    parts.sort(key=lambda part: part[0])
    return (id(task), base_dir, tuple(parts), context[1]), tuple(keep)


def _names(value: Any) -> Any:
    """The variables the templates inside `value` read, or _IMPURE."""
    kind = type(value)
    if kind is str:
        if "{" not in value:
            return ()
        names = rendermemo.pure_names(_ENV, value)
        return _IMPURE if names is None else names
    if kind in _SCALARS or not isinstance(value, Mapping | list | tuple):
        return ()  # a number, a Secret or Unsafe text (never rendered), an opaque object
    if not isinstance(value, dict | list | tuple):
        return _IMPURE  # a mapping of its own kind (hostvars): not walked here
    walked = _walks.get(id(value))
    if walked is not None and walked[0] is value:
        return walked[1]
    names = _walk(value)
    with _lock:
        if len(_walks) >= LIMIT:  # walks are kept even for keys never stored: bounded too
            _walks.clear()
        _walks[id(value)] = (value, names)
    return names


def _walk(value: Any) -> Any:
    items = value.values() if isinstance(value, dict) else value
    found: set[str] = set()
    for item in items:
        names = _names(item)
        if names is _IMPURE:
            return _IMPURE
        found.update(names)
    return frozenset(found)


def reads_any(task: Any, variables: dict, names: Any) -> bool:
    """Whether the task's templates (args or `when`) read one of `names`,
    directly or through variables built from them. Decided from the parsed
    templates: a name merely appearing in a path is no reference."""
    return not names_through(_written_names(task), variables).isdisjoint(names)


_WRITTEN: dict[int, tuple[Any, frozenset[str]]] = {}  # id(task) -> (task, its names)


def _written_names(task: Any) -> frozenset[str]:
    """The names the task's own templates read: the same for every container."""
    kept = _WRITTEN.get(id(task))
    if kept is None or kept[0] is not task:
        names = referenced_names(dict(task.args))
        names |= referenced_names(task.when, expression=True)
        names |= referenced_names(task.delegate_to or "")
        names |= referenced_names(keyword_templates(task))
        kept = _WRITTEN[id(task)] = (task, frozenset(names))
    return kept[1]


# A lookup runs a command or reads a file on this machine: once, when its task is
# reached, as ansible-playbook does (a file an earlier task writes, a pipe with effects,
# a failure that ignore_errors must hold). Preflight and the probe leave such a task
# to then.
LOOKUP_CALLS = frozenset({"lookup", "query", "q"})


def calls_lookup(task: Any, variables: Mapping[str, Any]) -> bool:
    """Whether the task's arguments, `when` or loop call a lookup, directly or
    through the variables they read."""
    return reads_any(task, variables, LOOKUP_CALLS) or loop_calls_lookup(task, variables)


def loop_calls_lookup(task: Any, variables: Mapping[str, Any]) -> bool:
    if task.loop is None:
        return False
    if task.loop.kind in WITH_EFFECTS:  # with_file, with_pipe, ...: a lookup itself
        return True
    return not LOOKUP_CALLS.isdisjoint(names_reached(task.loop.terms, {**variables, **task.vars}))
