"""`find`: files under directories by name pattern and type, as Ansible's `find` lists them.

The probe lists every entry (lstat fields, one `find -printf` per path); names, types
and hidden entries are filtered here, in Ansible's order (`os.walk`: a directory's files,
then its directories, each directory's entries before the next level's). Never changed.
"""

from __future__ import annotations

import base64
import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Any

from pctfleet.errors import PlaybookError, brief
from pctfleet.modules.args import Args, Context, arg, flag
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World
from pctfleet.modules.stat import statinfo
from pctfleet.sh import snippet

_TYPES = {"f": 0o100000, "d": 0o040000, "l": 0o120000, "c": 0o020000, "b": 0o060000}
_TYPES |= {"p": 0o010000, "s": 0o140000}
# Ansible's find arguments pctfleet does not implement: refused by name, never ignored.
UNSUPPORTED = ("contains", "read_whole_file", "age", "age_stamp", "size", "encoding")


def _names(value: Any, where: str) -> tuple[str, ...]:
    """Ansible's list type: a list, or a comma-separated string."""
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


def _depth(value: Any, where: str) -> int:
    if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
        raise PlaybookError(
            f"find: 'depth' must be a whole number >= 1, got {brief(value)}", where=where
        )
    return int(value)


@dataclass(frozen=True)
class FindArgs(Args):
    paths: tuple[str, ...] = arg((), required=True, aliases=("name", "path"), convert=_names)
    patterns: tuple[str, ...] = arg((), aliases=("pattern",), convert=_names)
    excludes: tuple[str, ...] = arg((), aliases=("exclude",), convert=_names)
    use_regex: bool = arg(False, convert=flag)
    file_type: str = arg("file", choices={"file", "directory", "link", "any"})
    recurse: bool = arg(False, convert=flag)
    hidden: bool = arg(False, convert=flag)
    depth: int | None = arg(None, convert=_depth)
    follow: bool = arg(False, convert=flag)
    get_checksum: bool = arg(False, convert=flag)
    contains: Any = arg(None)
    read_whole_file: Any = arg(None)
    age: Any = arg(None)
    age_stamp: Any = arg(None)
    size: Any = arg(None)
    encoding: Any = arg(None)

    def check(self, ctx: Context, where: str) -> None:
        given = [key for key in UNSUPPORTED if getattr(self, key) is not None]
        given += [key for key in ("follow", "get_checksum") if getattr(self, key)]
        if given:
            raise self.fail(
                f"{given[0]!r} is not supported here (pctfleet's find filters by "
                "paths, patterns, excludes, use_regex, file_type, recurse, hidden, "
                "depth)",
                where,
            )
        for path in self.paths:
            if not path.startswith("/"):
                raise self.fail(f"'paths' must be absolute paths, got {path!r}", where)
        if self.use_regex:
            for pattern in (*self.patterns, *self.excludes):
                try:
                    re.compile(pattern)
                except re.error as err:
                    raise self.fail(f"bad pattern {pattern!r} ({err})", where) from None


@dataclass(frozen=True)
class Listing:
    """Per path given: its records (type, stat line, path), or None when it is no directory."""

    paths: tuple[list[tuple[str, str, str]] | None, ...] = field(default_factory=tuple)


class FindFact(FactReader[Listing]):
    State = Listing

    def command(self, args: FindArgs, want_diff: bool) -> str:
        depth = args.depth if args.depth else ""
        return snippet(
            "find_entries", argv=list(args.paths), RECURSE=int(args.recurse), DEPTH=depth
        )

    def parse(self, reading: Fact) -> Listing:
        fields = reading.fields()
        found: list[list[tuple[str, str, str]] | None] = []
        index = 0
        while f"entries{index}" in fields or f"skip{index}" in fields:
            raw = fields.get(f"entries{index}")
            found.append(_records(base64.b64decode(raw)) if raw is not None else None)
            index += 1
        return Listing(tuple(found))

    def converged(self, args: FindArgs, world: World) -> dict[str, str]:
        return {f"entries{i}": "" for i in range(len(args.paths))}


def _records(data: bytes) -> list[tuple[str, str, str]]:
    """(type, target type, stat line as `statinfo` reads it, path) from find's NUL records."""
    parts = data.decode("utf-8", errors="surrogateescape").split("\0")
    records = []
    for line, path in zip(parts[0::2], parts[1::2], strict=False):
        kind, target, perms, *rest = line.split(" ")
        raw = f"{_TYPES.get(kind, 0) | int(perms, 8):x}"
        stat_line = " ".join([raw, *rest[:6], "0", "512", *rest[6:]])
        records.append((kind, target, stat_line, os.path.normpath(path)))
    return records


def _walk_order(root: str, records: list) -> list:
    """`records` in os.walk's top-down order: each directory's files, then its directories."""
    children: dict[str, list] = {}
    for record in records:
        children.setdefault(os.path.dirname(record[3]), []).append(record)
    ordered, todo = [], [os.path.normpath(root)]
    while todo:
        entries = children.get(todo.pop(0), [])
        dirs = [r for r in entries if r[1] == "d"]
        ordered += [r for r in entries if r[1] != "d"] + dirs
        todo = [r[3] for r in dirs if r[0] == "d"] + todo  # links to directories: not entered
    return ordered


def _selected(args: FindArgs, name: str) -> bool:
    def hit(pattern: str) -> bool:
        return bool(re.match(pattern, name)) if args.use_regex else fnmatch.fnmatch(name, pattern)

    patterns = args.patterns or ("*" if not args.use_regex else ".*",)
    if not any(hit(p) for p in patterns):
        return False
    return not any(hit(e) for e in args.excludes)


def matches(args: FindArgs, kind: str, path: str) -> bool:
    name = os.path.basename(path)
    if name.startswith(".") and not args.hidden:
        return False
    wanted = {"file": "f", "directory": "d", "link": "l"}.get(args.file_type)
    return (wanted is None or kind == wanted) and _selected(args, name)


class Find(Module, name="find", args=FindArgs, fact=FindFact()):
    """List files by name and type into the registered `files`, as Ansible's `find`."""

    registers_output = False

    def plan(self, args: FindArgs, state: Listing, check: bool) -> Plan:
        files: list[dict[str, Any]] = []
        skipped: dict[str, str] = {}
        examined = 0
        for index, root in enumerate(args.paths):
            records = state.paths[index] if index < len(state.paths) else None
            if records is None:
                skipped[root] = f"'{root}' is not a directory"
                continue
            examined += len(records)
            for kind, _, line, path in _walk_order(root, records):
                if matches(args, kind, path):
                    info = statinfo(line)
                    info.pop("blocks"), info.pop("block_size")
                    files.append({"path": path, **info})
        result = {"files": files, "matched": len(files), "examined": examined}
        result["skipped_paths"] = skipped
        return Plan(False, msg="All paths examined", result=result)
