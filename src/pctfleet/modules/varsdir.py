"""`include_vars: {dir: ...}`: a folder of vars files read as ansible-core reads it.

Its folders are walked in the order of their paths (links followed), each one's
files in name order, down to `depth` (0: all); a file is read when its name
matches `files_matching`, no `ignore_files` pattern matches its end, and its
extension is one of `extensions` (`yaml`, `yml`, `json`): another extension fails
the task unless `ignore_unknown_extensions`. Later files win, name by name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.playbook.yamlsrc import load_yaml_text, plain, read_text

EXTENSIONS = ("yaml", "yml", "json")


@dataclass(frozen=True)
class Walk:
    """How a folder is read: the arguments that only go with `dir`."""

    depth: int = 0
    files_matching: re.Pattern | None = None
    ignore_files: tuple[str, ...] = ()
    extensions: tuple[str, ...] = EXTENSIONS
    ignore_unknown_extensions: bool = False


def folder(name: str, base_dir: str, role_path: str | None) -> Path:
    """Where `dir` is: in a role its vars/ folder (a name starting with vars/ the
    role's own, where that exists), else next to the playbook."""
    if role_path:
        if name.split("/")[0] == "vars" and (Path(role_path) / name).exists():
            return Path(role_path) / name
        return Path(role_path) / "vars" / name
    return Path(base_dir) / os.path.expanduser(name)


def read(root: Path, walk: Walk, where: str) -> tuple[dict[str, Any], list[str]]:
    """The variables of the folder's files, later files over earlier ones, and the
    files read, in order."""
    if not root.exists():
        raise PlaybookError(f"include_vars: {root} directory does not exist", where=where)
    if not root.is_dir():
        raise PlaybookError(f"include_vars: {root} is not a directory", where=where)
    values: dict[str, Any] = {}
    read_files: list[str] = []
    for path in _files(root, walk):
        if not _known_extension(path.name, walk.extensions):
            if walk.ignore_unknown_extensions:
                continue
            allowed = ", ".join(walk.extensions)
            raise PlaybookError(
                f"include_vars: {path} does not have a valid extension: {allowed}", where=where
            )
        values.update(_mapping(path, where))
        read_files.append(str(path))
    return values, read_files


def _files(root: Path, walk: Walk) -> Iterator[Path]:
    for here, _, names in sorted(os.walk(root, followlinks=True), key=lambda step: step[0]):
        if walk.depth and len(Path(here).relative_to(root).parts) + 1 > walk.depth:
            continue
        for name in sorted(names):
            if walk.files_matching and not walk.files_matching.search(name):
                continue
            if any(re.search(f"{pattern}$", name) for pattern in walk.ignore_files):
                continue
            if (Path(here) / name).exists():
                yield Path(here) / name


def _known_extension(name: str, extensions: Sequence[str]) -> bool:
    return os.path.splitext(name)[1][1:] in extensions


def _mapping(path: Path, where: str) -> Mapping[str, Any]:
    data = load_yaml_text(read_text(path), str(path))
    if data is None:  # an empty file (or only comments) adds nothing
        return {}
    if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
        raise PlaybookError(
            f"include_vars: {path} must be stored as a dictionary/hash", where=where
        )
    return plain(data)
