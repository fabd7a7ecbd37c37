"""`lookup()` and `query()` (`q()`) in a playbook's templates, and `with_<lookup>`
loops, for ansible-core's everyday lookups, run on this machine as there: env, file,
pipe, lines, vars, first_found, fileglob, template, items, list, indexed_items,
together, nested, subelements, random_choice. A file is looked for in the role's
files/ (templates/ for `template`), then the playbook folder's, then the folder
itself; a lookup not named here is an error naming it."""

from __future__ import annotations

import glob
import itertools
import os
import secrets
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import jinja2


class LookupFailed(ValueError):
    """A lookup could not give its values, said as Ansible says it."""


# What `errors='warn'` let pass while one task ran: the task reports them.
_WARNED: ContextVar[list[str] | None] = ContextVar("lookup_warnings", default=None)


@contextmanager
def warnings_kept() -> Iterator[list[str]]:
    """Collect the failures lookups let pass with `errors='warn'` inside the block."""
    kept: list[str] = []
    token = _WARNED.set(kept)
    try:
        yield kept
    finally:
        _WARNED.reset(token)


def _search(context: Mapping[str, Any], subdir: str, name: str, in_play: bool = True) -> list[Path]:
    """Where a relative name is looked for: the role's SUBDIR and folder, then the
    playbook's (its SUBDIR too unless `in_play` is false: first_found does not look
    there, measured)."""
    if os.path.isabs(name):
        return [Path(name)]
    found = []
    role, play = context.get("role_path"), context.get("playbook_dir")
    if isinstance(role, str) and role:
        found += [Path(role) / subdir / name, Path(role) / name]
    if isinstance(play, str) and play:
        found += [Path(play) / subdir / name] if in_play else []
        found += [Path(play) / name]
    return found or [Path(name)]


def _find(context: Mapping[str, Any], subdir: str, name: str, in_play: bool = True) -> Path | None:
    return next((p for p in _search(context, subdir, name, in_play) if p.is_file()), None)


def _env(context: Mapping, terms: list, default: str = "", **_: Any) -> list:
    return [os.environ.get(str(term), default) for term in terms]


def _file(context: Mapping, terms: list, rstrip: bool = True, lstrip: bool = False, **_: Any):
    out = []
    for term in terms:
        path = _find(context, "files", str(term))
        if path is None:
            raise LookupFailed(f"The 'file' lookup had an issue accessing the file '{term}'")
        text = path.read_text()
        text = text.rstrip() if rstrip else text
        out.append(text.lstrip() if lstrip else text)
    return out


def _shell(context: Mapping, name: str, term: Any) -> str:
    folder = context.get("playbook_dir")  # ansible-core runs it in the playbook's folder
    cwd = folder if isinstance(folder, str) and os.path.isdir(folder) else None
    done = subprocess.run(  # noqa: S602 - a shell command is what these lookups run
        str(term), shell=True, capture_output=True, text=True, cwd=cwd
    )
    if done.returncode != 0:
        raise LookupFailed(f"lookup_plugin.{name}({term}) returned {done.returncode}")
    return done.stdout


def _pipe(context: Mapping, terms: list, **_: Any) -> list:
    return [_shell(context, "pipe", term).rstrip() for term in terms]


def _lines(context: Mapping, terms: list, **_: Any) -> list:
    return [line for term in terms for line in _shell(context, "lines", term).splitlines()]


def _vars(context: Mapping, terms: list, **kwargs: Any) -> list:
    out = []
    for term in terms:
        if term in context and not isinstance(context[term], jinja2.Undefined):
            out.append(context[term])
        elif "default" in kwargs:
            out.append(kwargs["default"])
        else:
            raise LookupFailed(f"No variable named '{term}' was found")
    return out


def _first_found(context: Mapping, terms: list, subdir: str = "", **kwargs: Any) -> list:
    """As a lookup, the role's and playbook's folders; as a loop (`subdir` given by the
    task's module: templates, vars or files), their SUBDIR first."""
    names = [t for term in terms for t in (term if isinstance(term, list) else [term])]
    if isinstance(kwargs.get("files"), list):
        names += kwargs["files"]
    for name in names:
        for folder in kwargs.get("paths") or [None]:
            relative = str(name) if folder is None else os.path.join(folder, str(name))
            path = _find(context, subdir or "files", relative, in_play=bool(subdir))
            if path is not None:
                return [str(path)]
    if kwargs.get("skip") or kwargs.get("errors") == "ignore":
        return []
    raise LookupFailed("No file was found when using first_found.")


def _fileglob(context: Mapping, terms: list, **_: Any) -> list:
    out: list[str] = []
    for term in terms:
        for candidate in _search(context, "files", str(term)):
            found = [g for g in glob.glob(str(candidate)) if os.path.isfile(g)]
            if found:
                out += found
                break
    return out


def _template(context: Mapping, terms: list, **_: Any) -> list:
    from pctfleet.playbook.templating import render_template_file

    out = []
    for term in terms:
        path = _find(context, "templates", str(term))
        if path is None:
            raise LookupFailed(f"the template file {term} could not be found for the lookup")
        # The context's own variables, never its rendered values: those may hold
        # what a container printed, which is data, never a template.
        variables = getattr(context, "parent", context)
        out.append(render_template_file(path, variables, where=f"lookup('template', {term!r})"))
    return out


def _indexed(context: Mapping, terms: list, **_: Any) -> list:
    return [[index, item] for index, item in enumerate(_one_level(terms))]


def _flat(context: Mapping, terms: list, **_: Any) -> list:
    return _one_level(terms)


def _one_level(terms: Any) -> list:
    return [t for term in terms for t in (term if isinstance(term, list | tuple) else [term])]


def _together(context: Mapping, terms: list, **_: Any) -> list:
    if not terms:
        raise LookupFailed("with_together requires at least one element in each list")
    lists = [term if isinstance(term, list) else [term] for term in terms]
    return [_one_level(row) for row in itertools.zip_longest(*lists, fillvalue=None)]


def _nested(context: Mapping, terms: list, **_: Any) -> list:
    if not terms:
        raise LookupFailed("with_nested requires at least one element in the nested list")
    lists = [term if isinstance(term, list) else [term] for term in terms]
    rows = lists[0]
    for more in lists[1:]:
        rows = [_one_level([row, item]) for row in rows for item in more]
    return [_one_level(row if isinstance(row, list) else [row]) for row in rows]


def _subelements(terms: list) -> list:
    """ansible-core's subelements lookup: (element, sub-item) pairs; an element
    registered as skipped is left out, and the first of each pair no longer holds
    the list it was paired from."""
    usage = "subelements lookup expects a list of two or three items"
    if not 2 <= len(terms) <= 3 or not isinstance(terms[0], list | dict):
        raise LookupFailed(usage)
    if not isinstance(terms[1], str):
        raise LookupFailed(usage)
    flags = terms[2] if len(terms) == 3 else {}
    if not isinstance(flags, dict) or not set(flags) <= {"skip_missing"}:
        raise LookupFailed(f"{usage}: the optional third item must be a dict with flags")
    elements = terms[0]
    if isinstance(elements, dict):
        if elements.get("skipped", False) is not False:
            return []
        elements = list(elements.values())
    keys = terms[1].split(".")
    pairs = []
    for element in elements:
        if not isinstance(element, dict):
            raise LookupFailed(f"subelements lookup expects a dictionary, got '{element}'")
        if element.get("skipped", False) is not False:
            continue
        element = dict(element)
        sub = _sub_list(element, keys, bool(flags.get("skip_missing", False)))
        pairs += [[element, item] for item in sub]
    return pairs


def _sub_list(element: dict, keys: list[str], skip_missing: bool) -> list:
    """The list at `keys` in `element`, taken out of it (its last dict is copied first,
    so the playbook's own variable keeps it)."""
    holder = element
    for key in keys[:-1]:
        if key not in holder or not isinstance(holder[key], dict):
            if skip_missing:
                return []
            if key not in holder:
                raise LookupFailed(f"could not find '{key}' key in iterated item '{holder}'")
            raise LookupFailed(f"the key {key} should point to a dictionary, got '{holder[key]}'")
        holder[key] = holder = dict(holder[key])
    last = keys[-1]
    if last not in holder:
        if skip_missing:
            return []
        raise LookupFailed(f"could not find '{last}' key in iterated item '{holder}'")
    if not isinstance(holder[last], list):
        raise LookupFailed(f"the key {last} should point to a list, got '{holder[last]}'")
    return holder.pop(last)


def _random_choice(context: Mapping, terms: list, **_: Any) -> list:
    return [secrets.choice(terms)] if terms else terms


LOOKUPS: dict[str, Callable[..., list]] = {
    "env": _env,
    "file": _file,
    "pipe": _pipe,
    "vars": _vars,
    "first_found": _first_found,
    "fileglob": _fileglob,
    "template": _template,
    "items": _flat,
    "list": lambda context, terms, **_: list(terms),
    "indexed_items": _indexed,
    "lines": _lines,
    "together": _together,
    "nested": _nested,
    "subelements": lambda context, terms, **_: _subelements(terms),
    "random_choice": _random_choice,
}


def _run(context: Any, name: str, terms: tuple, kwargs: dict) -> list | None:
    """The lookup's values; None when it failed and `errors` is `ignore` or `warn`."""
    from pctfleet.playbook.templating import _Failure as _Failed  # it imports this module

    plugin = LOOKUPS.get(str(name).removeprefix("ansible.builtin."))
    if plugin is None:
        raise _Failed(f"lookup plugin {name!r} is not supported (known: {', '.join(LOOKUPS)})")
    kwargs.pop("wantlist", None)
    errors = kwargs.pop("errors", "strict")
    if errors not in ("strict", "warn", "ignore"):
        raise _Failed(f"lookup({name!r}): errors must be strict, warn or ignore, got {errors!r}")
    try:
        return plugin(context, list(terms), **kwargs)
    except (LookupFailed, OSError, TypeError) as exc:
        if errors == "strict":
            raise _Failed(f"lookup({name!r}): {exc}") from None
        kept = _WARNED.get()
        if errors == "warn" and kept is not None:
            kept.append(f"lookup({name!r}) failed: {exc}")
        return None


@jinja2.pass_context
def lookup(context: Any, name: str, *terms: Any, **kwargs: Any) -> Any:
    """Ansible's lookup(): one result as itself, several strings joined with commas
    (other values stay a list), unless wantlist=True; a failure that `errors` lets
    pass gives None ([] with wantlist)."""
    wantlist = kwargs.get("wantlist", False)
    found = _run(context, name, terms, kwargs)
    if found is None:
        return [] if wantlist else None
    if wantlist or not found:
        return found
    if len(found) == 1:
        return found[0]
    if all(isinstance(item, str) for item in found):
        return ",".join(found)
    return found


@jinja2.pass_context
def query(context: Any, name: str, *terms: Any, **kwargs: Any) -> list:
    kwargs["wantlist"] = True
    return lookup(context, name, *terms, **kwargs)


GLOBALS = {"lookup": lookup, "query": query, "q": query}
