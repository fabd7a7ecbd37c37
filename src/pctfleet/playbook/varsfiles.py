"""A play's `vars_files`, read as ansible-core 2.19 reads them (measured).

Each entry is a file name or a list of them (the first found wins); an entry with
no file found is skipped (Ansible says nothing; pctfleet warns). A name may be a
template: it is rendered for each container with its inventory variables, the
play's `vars` and the extra vars, so `vars/{{ site }}.yml` reads one file for
one site's containers and another for the next. An entry whose template reads a
variable that is not defined is skipped, with a warning, as in Ansible; names
are rendered in turn, each seeing what the entries before it read. Facts
are gathered by the play's first task, after the play's variables are set:
a name that reads them is refused with the way out (an include_vars task).
"""

from __future__ import annotations

import threading
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.errors import PlaybookError, TemplateError, brief
from pctfleet.facts import gathered
from pctfleet.inventory import VAR_NAME_RE
from pctfleet.playbook import search
from pctfleet.playbook.templating import referenced_names, render
from pctfleet.playbook.yamlsrc import YamlMap, load_yaml, plain

SKIPPED = "skipped, as ansible-playbook skips it"


@dataclass(frozen=True)
class Entry:
    """One `vars_files` item: its names (first found wins), and where it is written."""

    names: tuple[str, ...]
    where: str  # file:line
    ctx: str  # "play 'NAME'"

    @property
    def templated(self) -> bool:
        return any("{{" in name or "{%" in name for name in self.names)


@dataclass
class PlayVarsFiles:
    """A play's entries, some templated: read for each container's variables."""

    entries: tuple[Entry, ...]
    base: Path  # the playbook's folder
    over: dict[str, Any] = field(default_factory=dict)  # role vars: above every file
    _read: dict[Path, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def values_for(
        self, below: Mapping[str, Any], above: Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        """The entries' variables merged in order, then the role vars; and a warning for
        each entry skipped. Each name is rendered as Ansible renders it: in turn, seeing
        `below` (inventory and play vars), what earlier entries read, then `above`
        (extra vars, magic variables)."""
        merged: dict[str, Any] = {}
        warnings: list[str] = []
        for entry in self.entries:
            scope = ChainMap(dict(above), merged, dict(below))
            found, skipped = self.first_found(entry, scope)
            if found is not None:
                merged.update(found)
            elif skipped:
                warnings.append(skipped)
        merged.update(self.over)
        return merged, warnings

    def first_found(self, entry: Entry, scope: Mapping[str, Any]) -> tuple[dict | None, str]:
        """The first of the entry's files that exists, read; else why it was skipped."""
        names = []
        for name in entry.names:
            try:
                rendered = rendered_name(entry, name, scope)
            except Undefined as err:
                return None, f"{entry.where}: {entry.ctx}: vars file {name!r}: {err}: {SKIPPED}"
            names.append(rendered)
            path = search.vars_file(rendered, self.base)
            if path is not None:
                return self.read(path, entry), ""
        return None, not_found(entry, tuple(names), self.base)

    def read(self, path: Path, entry: Entry) -> dict[str, Any]:
        with self._lock:  # containers' threads share one read of each file
            if path not in self._read:
                self._read[path] = load_file(path, entry)
            return self._read[path]


class Undefined(Exception):
    """A name's template read a variable that is not defined (the message names it)."""


def rendered_name(entry: Entry, name: str, scope: Mapping[str, Any]) -> str:
    """`name` rendered in `scope`; Undefined where it reads an undefined variable."""
    if "{{" not in name and "{%" not in name:
        return name
    facts = sorted(referenced_names(name) & gathered.NAMES)
    if facts:
        raise PlaybookError(
            f"{entry.ctx}: vars_files entry {shown(entry.names)} reads facts "
            f"({', '.join(facts)}), which are gathered after the play's variables are "
            "set: read the file with an include_vars task instead",
            where=entry.where,
        )
    try:
        rendered = render(name, scope, where=f"{entry.where}: {entry.ctx}")
    except TemplateError as err:
        why = str(err).rpartition(": undefined variable")
        if why[1]:
            raise Undefined(f"undefined variable{why[2]}") from None
        raise
    if not isinstance(rendered, str) or not rendered:
        raise PlaybookError(
            f"{entry.ctx}: a vars_files name must render to a file name, got {brief(rendered)}",
            where=entry.where,
        )
    return rendered


def load_file(path: Path, entry: Entry) -> dict[str, Any]:
    data = load_yaml(path, what="a mapping of variables")
    if not isinstance(data, YamlMap):
        raise PlaybookError(
            f"{entry.ctx}: vars file {str(path)!r} must hold a mapping, got {brief(data)}",
            where=entry.where,
        )
    for name in data:
        if not isinstance(name, str) or not VAR_NAME_RE.match(name):
            raise PlaybookError(
                f"{entry.ctx}: {brief(name)} is not a valid name in 'vars_files'",
                where=data.where(name),
            )
    return plain(data)


def not_found(entry: Entry, names: tuple[str, ...], base: Path) -> str:
    rendered = "" if names == entry.names else f" (from {shown(entry.names)})"
    return (
        f"{entry.where}: {entry.ctx}: vars file {shown(names)}{rendered} not found in "
        f"{base}/vars or {base}: {SKIPPED}"
    )


def shown(names: tuple[str, ...]) -> str:
    return " or ".join(repr(n) for n in names) or "[]"
