"""A play's `vars_files`, read as ansible-core 2.19 reads them (measured).

Each entry is a file name or a list of them (the first found wins); an entry with
no file found is skipped (Ansible says nothing; pctfleet warns). A name may be a
template: it is rendered for each container with its inventory variables, the
play's `vars` and the extra vars, so `vars/{{ site }}.yml` reads one file for
one site's containers and another for the next. An entry whose template reads a
variable that is not defined is skipped, with a warning, as in Ansible. Facts
are gathered by the play's first task, after the play's variables are set:
a name that reads them is refused with the way out (an include_vars task).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.errors import PlaybookError, brief
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
    _read: dict[Path, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def values_for(self, scope: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The entries' variables merged in order, and a warning for each one skipped."""
        merged: dict[str, Any] = {}
        warnings: list[str] = []
        for entry in self.entries:
            names = rendered_names(entry, scope) if entry.templated else entry.names
            if isinstance(names, str):  # why it was skipped
                warnings.append(names)
                continue
            found = self.read(entry, names)
            if found is None:
                warnings.append(not_found(entry, names, self.base))
            else:
                merged.update(found)
        return merged, warnings

    def read(self, entry: Entry, names: tuple[str, ...]) -> dict[str, Any] | None:
        path = next(filter(None, (search.vars_file(n, self.base) for n in names)), None)
        if path is None:
            return None
        with self._lock:  # containers' threads share one read of each file
            if path not in self._read:
                self._read[path] = load_file(path, entry)
            return self._read[path]


def rendered_names(entry: Entry, scope: Mapping[str, Any]) -> tuple[str, ...] | str:
    """The entry's names rendered in `scope`, or the warning that skips it."""
    wanted = referenced_names(list(entry.names))
    facts = sorted(wanted & gathered.NAMES)
    if facts:
        raise PlaybookError(
            f"{entry.ctx}: vars_files entry {shown(entry.names)} reads facts "
            f"({', '.join(facts)}), which are gathered after the play's variables are "
            "set: read the file with an include_vars task instead",
            where=entry.where,
        )
    missing = sorted(name for name in wanted if name not in scope)
    if missing:
        return (
            f"{entry.where}: {entry.ctx}: vars file {shown(entry.names)} reads "
            f"{', '.join(missing)}, not defined here: {SKIPPED}"
        )
    names = render(list(entry.names), scope, where=f"{entry.where}: {entry.ctx}")
    for name in names:
        if not isinstance(name, str) or not name:
            raise PlaybookError(
                f"{entry.ctx}: a vars_files name must render to a file name, got {brief(name)}",
                where=entry.where,
            )
    return tuple(names)


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
