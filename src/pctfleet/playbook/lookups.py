"""`lookup()` and `query()` (`q()`) in a playbook's templates, for ansible-core's
everyday lookups, run on this machine as there: env, file, pipe, vars, first_found,
fileglob, template, items, list, indexed_items. A file is looked for in the role's
files/ (templates/ for `template`), then the playbook folder's, then the folder
itself; a lookup not named here is an error naming it."""

from __future__ import annotations

import glob
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2

from pctfleet.playbook.templating import _Failure as _Failed


class LookupFailed(ValueError):
    """A lookup could not give its values, said as Ansible says it."""


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


def _pipe(context: Mapping, terms: list, **_: Any) -> list:
    folder = context.get("playbook_dir")  # ansible-core runs it in the playbook's folder
    cwd = folder if isinstance(folder, str) and os.path.isdir(folder) else None
    out = []
    for term in terms:
        done = subprocess.run(  # noqa: S602 - a shell command is what the pipe lookup runs
            str(term), shell=True, capture_output=True, text=True, cwd=cwd
        )
        if done.returncode != 0:
            raise LookupFailed(f"lookup_plugin.pipe({term}) returned {done.returncode}")
        out.append(done.stdout.rstrip())
    return out


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


def _first_found(context: Mapping, terms: list, **kwargs: Any) -> list:
    names = [t for term in terms for t in (term if isinstance(term, list) else [term])]
    if isinstance(kwargs.get("files"), list):
        names += kwargs["files"]
    for name in names:
        for folder in kwargs.get("paths") or [None]:
            relative = str(name) if folder is None else os.path.join(folder, str(name))
            path = _find(context, "files", relative, in_play=False)
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
    return [[index, item] for index, item in enumerate(terms)]


def _flat(context: Mapping, terms: list, **_: Any) -> list:
    return [t for term in terms for t in (term if isinstance(term, list) else [term])]


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
}


def _run(context: Any, name: str, terms: tuple, kwargs: dict) -> list:
    plugin = LOOKUPS.get(str(name).removeprefix("ansible.builtin."))
    if plugin is None:
        raise _Failed(f"lookup plugin {name!r} is not supported (known: {', '.join(LOOKUPS)})")
    kwargs.pop("wantlist", None)
    try:
        return plugin(context, list(terms), **kwargs)
    except (LookupFailed, OSError, TypeError) as exc:
        raise _Failed(f"lookup({name!r}): {exc}") from None


@jinja2.pass_context
def lookup(context: Any, name: str, *terms: Any, **kwargs: Any) -> Any:
    """Ansible's lookup(): one result as itself, several joined with commas, unless
    wantlist=True."""
    wantlist = kwargs.get("wantlist", False)
    found = _run(context, name, terms, kwargs)
    if wantlist:
        return found
    if len(found) == 1:
        return found[0]
    return ",".join(str(item) for item in found)


@jinja2.pass_context
def query(context: Any, name: str, *terms: Any, **kwargs: Any) -> list:
    return _run(context, name, terms, kwargs)


GLOBALS = {"lookup": lookup, "query": query, "q": query}
