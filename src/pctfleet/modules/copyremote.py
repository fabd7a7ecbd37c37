"""`copy` with `remote_src`: a file or folder already in the container copied to `dest`
there, as ansible-core's copy module copies it (measured on 2.19).

The probe reads both sides in the one call (copy_remote_fact.sh): the source (links
followed), where the file goes, what is there and its sha1 (a folder: both trees, with
python3). A copy runs only where the sha1s differ, through a temp file beside `dest`.

ansible-core's rules, kept: a file goes into `dest` when `dest` ends in / or is a folder;
a new file gets 0644, a file replaced gets the source's mode (`mode` and `owner` given
apply after; `preserve` is the source's); the folders a `dest` ending in / makes get
`directory_mode`, `owner` and `group`. A folder `src` (its contents with a final /)
copies what is missing or different with the source's modes, keeps what `dest` holds
besides, and gives `owner`/`group` to everything in the folder it copies into.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

from pctfleet.modules.base import Fact, Plan, World, q
from pctfleet.modules.copytree import above, new_folder
from pctfleet.modules.file import PathState, attribute_fixes, path_state
from pctfleet.modules.modes import stat_text, wanted_mode
from pctfleet.modules.textfile import backup_name
from pctfleet.sh import library, snippet


@dataclass(frozen=True)
class RemoteReading:
    """Both sides as the probe read them ('' for `src`: nothing read)."""

    src: str = ""  # absent | file | directory | other
    src_mode: str = ""
    src_size: int = 0
    src_sha1: str = ""
    dest: str = ""  # where the file goes
    path: PathState = field(default_factory=PathState)
    sha1: str = ""
    missing: tuple[str, ...] = ()
    tree: dict | None = None
    tree_error: str = ""


def probe(args: Any) -> str:
    return snippet("copy_remote_fact", SRC=args.src, DEST=args.dest)


def parse(reading: Fact | None) -> RemoteReading:
    if reading is None:
        return RemoteReading()
    fields = reading.fields()
    attrs = fields.get("attrs", "").split(" ")
    if len(attrs) == 3:
        fields |= dict(zip(("mode", "owner", "group"), attrs, strict=True))
    size = fields.get("src_size", "")
    try:
        tree = json.loads(fields["tree"]) if "tree" in fields else None
    except ValueError:
        tree = None
    return RemoteReading(
        src=fields.get("src", ""),
        src_mode=fields.get("src_mode", "").zfill(4) if fields.get("src_mode") else "",
        src_size=int(size) if size.isdigit() else 0,
        src_sha1=fields.get("src_sha1", ""),
        dest=fields.get("dest", ""),
        path=path_state(fields),
        sha1=fields.get("sha1", ""),
        missing=tuple(line for line in fields.get("missing", "").split("\n") if line),
        tree=tree,
        tree_error=fields.get("tree_error", ""),
    )


def converged(args: Any, world: World) -> dict[str, str]:
    """A copied file, as the probe reads it where the task is done (the source's bytes
    are not known here: any sha1, the same on both sides)."""
    wanted = wanted_mode(None if args.preserve else args.mode, "0644") or "0644"
    owner, group = args.owner or "root", args.group or "root"
    return {
        "src": "file",
        "src_mode": stat_text(wanted),
        "src_size": "0",
        "src_sha1": "0" * 40,
        "dest": args.dest,
        "type": "file",
        "attrs": f"{stat_text(wanted)} {owner} {group}",
        "sha1": "0" * 40,
    }


def plan(args: Any, seen: RemoteReading, check: bool) -> Plan:
    if seen.src in ("", "absent"):
        return Plan(False, failed=True, msg=f"Source {args.src} not found")
    if seen.src == "other":
        return Plan(False, failed=True, msg=f"Cannot copy invalid source '{args.src}': not a file")
    if seen.src == "directory":
        return _folder(args, seen)
    return _file(args, seen)


def _file(args: Any, seen: RemoteReading) -> Plan:
    dest, kind = seen.dest or args.dest, seen.path.type
    result = {"dest": dest, "src": args.src}
    if kind == "directory":
        return Plan(False, failed=True, msg=f"{dest} is a directory", result=result)
    if kind != "absent" and not args.force:
        return Plan(False, msg="file already exists", result=result)
    current = seen.path.mode if kind == "file" else ""
    if kind != "file" or seen.sha1 != seen.src_sha1:
        # ansible-core: a new file gets what the umask leaves, one replaced the source's mode.
        start = "0644" if kind == "absent" else seen.src_mode or "0644"
        mode = seen.src_mode if args.preserve else wanted_mode(args.mode, start) or start
        lines = _parents(args, seen.missing)
        if args.backup and kind == "file":
            result["backup_file"] = backup_name(dest)
            lines.append(f"cp -p -- {q(dest)} {q(result['backup_file'])}")
        lines.append(f"pctfleet_copy {q(args.src)} {q(dest)} {q(mode)} {q(seen.src_sha1)}")
        made = PathState("file", "", mode, "root", "root")
        lines += attribute_fixes(dest, made, None, args.owner, args.group)[0]
        result |= _registered(args, seen, mode, made)
        before = "" if kind == "absent" else f"(sha1 {seen.sha1 or '?'})\n"
        diff = {"path": dest, "before": before, "after": f"(copy of {args.src})\n"}
        script = library(("copy_file",)) + "set -e\n" + "".join(f"{x}\n" for x in lines)
        return Plan(True, script=script, diff=diff, result=result)
    wanted = seen.src_mode if args.preserve else wanted_mode(args.mode, current)
    symbolic = None if args.preserve else args.mode
    fixes, attr_diff = attribute_fixes(dest, seen.path, wanted, args.owner, args.group, symbolic)
    result |= _registered(args, seen, wanted or current, seen.path)
    if not fixes:
        return Plan(False, result=result)
    diff = {"path": dest, "before": str(attr_diff["before"]), "after": str(attr_diff["after"])}
    return Plan(True, script="set -e\n" + "\n".join(fixes) + "\n", diff=diff, result=result)


def _registered(args: Any, seen: RemoteReading, mode: str, attrs: PathState) -> dict:
    """ansible-core's: the source's sha1 as `checksum`, `size`, `state`, the file's mode,
    owner and group."""
    out = {"checksum": seen.src_sha1, "size": seen.src_size, "state": "file", "mode": mode}
    for key, given in (("owner", args.owner), ("group", args.group)):
        value = given or getattr(attrs, key)
        if value:
            out[key] = value
    return out


def _parents(args: Any, missing: tuple[str, ...]) -> list[str]:
    """The folders above the file that are missing, made top first; with a `dest`
    ending in / (where ansible-core makes them) with `directory_mode`, `owner`, `group`."""
    if not args.dest.endswith("/"):
        return [f"mkdir -p -- {q(path)}" for path in missing]
    return [x for p in missing for x in new_folder(p, args.directory_mode, args.owner, args.group)]


def _folder(args: Any, seen: RemoteReading) -> Plan:
    """A folder in the container copied into `dest` (its contents, where `src` ends in
    /): missing or different files and missing folders, with the source's modes."""
    tree = seen.tree
    if tree is None:
        why = seen.tree_error or "its listing could not be read"
        return Plan(False, failed=True, msg=f"copy: cannot read the folder {args.src}: {why}")
    if args.mode is not None:
        message = (
            "mode with a remote_src folder is not supported: ansible-core sets it on the "
            "folder copied into (on a first run, on the folder above), not on the files"
        )
        return Plan(False, failed=True, msg=message)
    root, rows = tree["root"], tree["src"]
    odd = next((row[0] for row in rows if row[1] not in ("d", "f", "l")), None)
    if odd is not None:
        path = posixpath.join(args.src, odd)
        return Plan(False, failed=True, msg=f"{path} is not a file, folder or link: not copied")
    if tree.get("root_kind") == "o":
        return Plan(False, failed=True, msg=f"Destination {root} is not a directory")
    have = {row[0]: row for row in tree.get("dest", [])}
    lines = _root(args, tree)
    for rel, kind, mode, *extra in rows:
        path, there = posixpath.join(root, rel), have.get(rel)
        if there is not None and (there[1] == "d") != (kind == "d"):
            what = "a folder" if kind == "d" else "a file"
            return Plan(False, failed=True, msg=f"Destination {path}: the source has {what} there")
        lines += _entry(args, rel, kind, mode, extra[0] if extra else "", path, there)
    made = bool(lines)
    lines += _owners(args, root, tree, made)
    result = {"dest": args.dest, "src": args.src, "state": "directory"}
    if not lines:
        return Plan(False, result=result)
    script = library(("copy_file",)) + "set -e\n" + "".join(f"{x}\n" for x in lines)
    diff = {"path": root, "before": "", "after": f"(copy of {args.src})\n"}
    return Plan(True, script=script, diff=diff, result=result)


def _entry(
    args: Any, rel: str, kind: str, mode: str, what: str, path: str, there: list | None
) -> list[str]:
    """Lines copying one entry of the source folder where `dest` lacks it or differs
    (`what`: a file's sha1, a link's target): a folder made with the source's mode, a
    file copied with it, a link made as it is (as a first copy makes them)."""
    if kind == "d":
        return [f"mkdir -- {q(path)}", f"chmod {q(mode)} -- {q(path)}"] if there is None else []
    if kind == "l":
        if there is not None and there[1] == "l" and there[-1] == what:
            return []
        return [f"ln -sfn -- {q(what)} {q(path)}"]
    if there is not None and there[1] == "f" and there[-1] == what:  # `what`: its sha1
        return []
    return [f"pctfleet_copy {q(posixpath.join(args.src, rel))} {q(path)} {q(mode)} {q(what)}"]


def _root(args: Any, tree: dict) -> list[str]:
    """The folders above the copy and the folder it goes into, where missing: with a
    `dest` ending in / the ones ansible-core makes first, with `directory_mode`; the
    folder copied into, otherwise, with the source folder's mode (as copytree makes it)."""
    root, lines = posixpath.normpath(tree["root"]), []
    first = above(args.dest.rstrip("/")) if args.dest.endswith("/") else []
    new = list(tree.get("missing", [])) + ([root] if tree.get("root_kind") == "a" else [])
    for path in map(posixpath.normpath, new):
        if path in first:  # ansible-core makes `dest` (ending in /) before it copies
            lines += new_folder(path, args.directory_mode, args.owner, args.group)
        else:
            lines.append(f"mkdir -p -- {q(path)}")
            if path == root:
                lines.append(f"chmod {q(tree['src_mode'])} -- {q(path)}")
    return lines


def _owners(args: Any, root: str, tree: dict, made: bool) -> list[str]:
    """`owner` and `group` for everything in the folder copied into, extras included
    (ansible-core's chown_recursive), where anything there differs or is new."""
    lines = []
    rows = tree.get("dest", [])
    attrs = tree.get("root_attrs", ["", "", ""])
    for index, (tool, wanted) in enumerate((("chown", args.owner), ("chgrp", args.group))):
        if not wanted:
            continue
        differs = attrs[1 + index] != wanted or any(row[3 + index] != wanted for row in rows)
        if made or differs:
            lines.append(f"{tool} -hR -- {q(wanted)} {q(root)}")
    return lines
