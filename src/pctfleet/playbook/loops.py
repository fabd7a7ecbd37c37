"""A task's loop items and the variables each item runs with, as Ansible computes them.

`loop` takes a list as it is; `with_items` flattens one level; `with_list` a
list as it is; `with_dict` gives `{key, value}` items; `with_sequence` counts
(`start=1 end=5 stride=2 format=n%02d`, or `[start-]end[/stride][:format]`);
`with_fileglob` globs on the controller in the playbook's `files/` folder,
then the playbook's folder (the first with matches wins), sorted. Any other
`with_<name>` is the lookup of that name run with the rendered terms as a list, as
ansible-core runs it (`with_first_found` looks in the folder the task's module
suggests: templates/, vars/ or files/).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from typing import Any

from pctfleet.errors import TemplateError, brief
from pctfleet.playbook.lookups import LOOKUPS, LookupFailed
from pctfleet.playbook.templating import render, unsafe

# Loops computed here; every other with_<name> runs the lookup of that name.
NATIVE = ("loop", "items", "list", "dict", "sequence", "fileglob")
# Loops whose lookup reads files or runs commands here: run once, when the task is reached.
WITH_EFFECTS = frozenset({"file", "lines", "pipe", "template", "first_found", "random_choice"})
WITH_LOOKUPS = tuple(name for name in LOOKUPS if name not in NATIVE)

_SHORTCUT = re.compile(
    r"^(?:(?P<start>[+-]?(?:0x)?[0-9a-f]+)-)?(?P<end>[+-]?(?:0x)?[0-9a-f]+)"
    r"(?:/(?P<stride>[+-]?(?:0x)?[0-9a-f]+))?(?::(?P<format>.+))?$",
    re.IGNORECASE,
)


def loop_items(
    loop: Any, variables: Mapping[str, Any], base_dir: str, where: str, module: str = ""
) -> list:
    """The items of `loop` (a loader `Loop`), rendered with `variables` and marked as
    data: `{{ item }}` must not render what a file, a command or `{{ '{{' }}` produced.
    `module` is the task's (with_first_found's folder follows it)."""
    if loop.kind not in NATIVE:
        return unsafe(_with_lookup(loop, variables, where, module))
    return unsafe(_items(loop, variables, base_dir, where))


def _with_lookup(loop: Any, variables: Mapping[str, Any], where: str, module: str) -> list:
    terms = render(loop.terms, variables, where=where)
    terms = terms if isinstance(terms, list) else [terms]
    extra = {}
    if loop.kind == "first_found":
        folder = next((f for f in ("template", "var", "file") if f in module), "file")
        extra["subdir"] = folder + "s"
    try:
        return list(LOOKUPS[loop.kind](variables, terms, **extra))
    except (LookupFailed, OSError, TypeError) as exc:
        raise TemplateError(f"with_{loop.kind}: {exc}", where=where) from None


def _items(loop: Any, variables: Mapping[str, Any], base_dir: str, where: str) -> list:
    terms = render(loop.terms, variables, where=where)
    kind = loop.kind
    if kind == "sequence":
        return _sequence(terms, where)
    if kind == "fileglob":
        return _fileglob(terms, base_dir)
    if kind == "dict":
        if not isinstance(terms, Mapping):
            raise TemplateError(f"with_dict needs a mapping, got {brief(terms)}", where=where)
        return [{"key": k, "value": v} for k, v in terms.items()]
    if kind == "loop" and not isinstance(terms, list):
        raise TemplateError(f"'loop' needs a list, got {brief(terms)}", where=where)
    items = terms if isinstance(terms, list) else [terms]
    if kind == "items":
        return [sub for item in items for sub in (item if isinstance(item, list) else [item])]
    return list(items)


def loop_vars(loop: Any, index: int, items: list) -> dict[str, Any]:
    """What item `index` of `items` sees: the loop variable, `index_var`, `ansible_loop`."""
    out: dict[str, Any] = {loop.loop_var: items[index], "ansible_loop_var": loop.loop_var}
    if loop.index_var:
        out[loop.index_var] = index
        out["ansible_index_var"] = loop.index_var
    if loop.extended:
        length = len(items)
        out["ansible_loop"] = {
            "allitems": items,
            "index": index + 1,
            "index0": index,
            "revindex": length - index,
            "revindex0": length - index - 1,
            "first": index == 0,
            "last": index == length - 1,
            "length": length,
            **({"previtem": items[index - 1]} if index > 0 else {}),
            **({"nextitem": items[index + 1]} if index < length - 1 else {}),
        }
    return out


def _sequence(terms: Any, where: str) -> list[str]:
    words = terms if isinstance(terms, list) else [terms]
    out: list[str] = []
    for term in words:
        out += _one_sequence(str(term).strip(), where)
    return out


def _one_sequence(term: str, where: str) -> list[str]:
    spec = {"start": "1", "end": None, "count": None, "stride": None, "format": "%d"}
    match = _SHORTCUT.match(term) if "=" not in term else None
    if match:
        spec.update({k: v for k, v in match.groupdict().items() if v is not None})
    else:
        for word in term.split():
            key, sep, value = word.partition("=")
            if not sep or key not in spec:
                raise TemplateError(f"with_sequence: cannot read {word!r}", where=where)
            spec[key] = value
    try:
        start = int(spec["start"], 0)
        stride = int(spec["stride"], 0) if spec["stride"] is not None else None
        if spec["count"] is not None:
            end = start + (int(spec["count"], 0) - 1) * (stride or 1)
        elif spec["end"] is not None:
            end = int(spec["end"], 0)
        else:
            raise TemplateError("with_sequence: 'end' or 'count' is required", where=where)
    except ValueError as err:
        raise TemplateError(f"with_sequence: {err}", where=where) from None
    stride = stride if stride is not None else (1 if end >= start else -1)
    if stride == 0 or (end - start) * stride < 0:
        message = f"with_sequence: cannot count from {start} to {end} by {stride}"
        raise TemplateError(message, where=where)
    return [spec["format"] % n for n in range(start, end + (1 if stride > 0 else -1), stride)]


def _fileglob(terms: Any, base_dir: str) -> list[str]:
    out: list[str] = []
    for term in terms if isinstance(terms, list) else [terms]:
        term = str(term)
        bases = [""] if os.path.isabs(term) else [os.path.join(base_dir, "files"), base_dir]
        for base in bases:
            found = sorted(p for p in glob.glob(os.path.join(base, term)) if os.path.isfile(p))
            if found:
                out += found
                break
    return out


def item_scopes(task: Any, variables: Mapping[str, Any], base_dir: str, where: str) -> list[dict]:
    """The variables `task` runs with (its own `vars` over `variables`), once per loop
    item; errors when its loop cannot be computed from `variables`."""
    own = getattr(task, "defaults", {})  # its role's defaults: under everything else
    scope = {**own, **variables, **task.vars, **getattr(task, "params", {})}
    if task.loop is None:
        return [scope]
    items = loop_items(task.loop, scope, base_dir, where, task.module)
    return [{**scope, **loop_vars(task.loop, i, items)} for i in range(len(items))]
