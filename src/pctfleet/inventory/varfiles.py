"""`group_vars/` and `host_vars/` beside an inventory or a playbook, found and read
the way ansible-core's `host_group_vars` plugin does.

For a group (host) NAME, FOLDER/group_vars (host_vars) holds its variables in the
first of NAME, NAME.yml, NAME.yaml and NAME.json that exists. A folder found that
way is read whole: its files with no extension or one of those three, and its
subfolders without an extension, in sorted order, leaving out hidden names and
backups (`~`). Later files win per top-level key; an empty file adds nothing. A
vault-encrypted file is decrypted, and its text values are secrets, as any vars file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pctfleet.errors import InventoryError, brief
from pctfleet.inventory.checks import VAR_NAME_RE
from pctfleet.playbook.yamlsrc import YamlMap, load_yaml_text, plain, read_text

EXTENSIONS = (".yml", ".yaml", ".json")
_CANDIDATES = ("", *EXTENSIONS)


class VarFiles:
    """The group_vars/host_vars of one folder, read once per name. `hidden` names
    (an Ansible inventory's connection variables) are left out of what `group_vars`
    and `host_vars` give: the inventory consumes them itself (see `raw`)."""

    def __init__(self, base: str | Path, hidden: Iterable[str] = ()) -> None:
        self.base = os.path.realpath(base)
        self.hidden = frozenset(hidden)
        self._read: dict[tuple[str, str], dict[str, Any]] = {}
        self._folders = {
            sub: os.path.isdir(os.path.join(self.base, sub)) for sub in ("group_vars", "host_vars")
        }

    def __repr__(self) -> str:
        return f"VarFiles({self.base!r})"

    @property
    def empty(self) -> bool:
        """Neither folder exists: nothing here can set a variable."""
        return not any(self._folders.values())

    def raw(self, kind: str, name: str) -> dict[str, Any]:
        """Every variable the files of group (`kind` "group") or host NAME set."""
        key = (kind, name)
        if key not in self._read:
            self._read[key] = self._load(f"{kind}_vars", name)
        return self._read[key]

    def group_vars(self, name: str) -> dict[str, Any]:
        return self._visible(self.raw("group", name))

    def host_vars(self, name: str) -> dict[str, Any]:
        return self._visible(self.raw("host", name))

    def _visible(self, values: dict[str, Any]) -> dict[str, Any]:
        if not self.hidden or self.hidden.isdisjoint(values):
            return values
        return {k: v for k, v in values.items() if k not in self.hidden}

    def _load(self, sub: str, name: str) -> dict[str, Any]:
        if not self._folders[sub] or not _safe_name(name):
            return {}
        merged: dict[str, Any] = {}
        for path in find_files(os.path.join(self.base, sub), name):
            merged.update(_read_vars(path))
        return merged


def find_files(folder: str, name: str) -> list[str]:
    """The files that hold NAME's variables in `folder`, in the order they apply."""
    for ext in _CANDIDATES:
        path = os.path.join(folder, name + ext)
        if os.path.isdir(path):
            return _folder_files(path)
        if os.path.exists(path):
            return [path]
    return []


def _folder_files(folder: str) -> list[str]:
    found: list[str] = []
    for entry in sorted(os.listdir(folder)):
        if entry.startswith(".") or entry.endswith("~"):
            continue
        path = os.path.join(folder, entry)
        ext = os.path.splitext(entry)[1]
        if os.path.isdir(path):
            if not ext:
                found.extend(_folder_files(path))
        elif os.path.isfile(path) and (not ext or ext in EXTENSIONS):
            found.append(path)
    return found


def _safe_name(name: str) -> bool:
    # Names come from an inventory; none may lead out of the folder.
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


def _read_vars(path: str) -> dict[str, Any]:
    data = load_yaml_text(read_text(path), path)
    if not data:  # as Ansible: an empty document, mapping or list adds nothing
        return {}
    if not isinstance(data, YamlMap):
        raise InventoryError(f"must hold a mapping of variables, got {brief(data)}", where=path)
    for key in data:
        if not isinstance(key, str) or not VAR_NAME_RE.match(key):
            raise InventoryError(
                f"variable name {brief(key)} is invalid (letters, digits and '_', "
                "not starting with a digit)",
                where=data.where(key),
            )
    return plain(data)


def merged_files(
    layers: Iterable[VarFiles], groups: Iterable[str], host: str | None, raw: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(group level, host level) of `layers` for one host, in ansible-core's order:
    every layer's `all`, then every layer's groups (in the order given), then every
    layer's host file. The inventory's own group and host vars go between the two."""
    layers = [files for files in layers if not files.empty]
    group_level: dict[str, Any] = {}
    host_level: dict[str, Any] = {}
    if not layers:
        return group_level, host_level
    names = list(groups)

    def read(files: VarFiles, kind: str, name: str) -> Mapping[str, Any]:
        if raw:
            return files.raw(kind, name)
        return files.group_vars(name) if kind == "group" else files.host_vars(name)

    for files in layers:
        group_level.update(read(files, "group", "all"))
    for files in layers:
        for name in names:
            group_level.update(read(files, "group", name))
    if host is not None:
        for files in layers:
            host_level.update(read(files, "host", host))
    return group_level, host_level


def read_now(inventory: Any) -> None:
    """Read every file that applies to `inventory` now (they are kept), so a bad one
    stops the command before any login, whatever the inventory's format."""
    for files in inventory.var_files:
        files.raw("group", "all")
        for name in inventory.groups:
            files.raw("group", name)
        for container in inventory.containers:
            if container.host:
                files.raw("host", container.host)
