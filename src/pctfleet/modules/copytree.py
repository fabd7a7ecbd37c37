"""`copy` of a folder from the controller: `src: conf/` puts the folder's contents into
`dest`, `src: conf` the folder itself, recursively, as ansible-core's copy action does.

The folder is walked on the controller with ansible-core's rules (`_walk_dirs`): a link
to a file is copied as that file, a link to a folder is walked, a link that cannot be
followed (dangling, or a loop back into the copy) is made as a link. One probe snippet
reads every destination path (type, mode, owner, group, sha256 of a file), so a
converged container costs its one call; only the files whose bytes differ are pushed,
each atomically and verified (`push.sh`), and one script then makes the folders and
links and fixes attributes.

What ansible-core does, measured (2.19): files the source does not have stay; a new
folder gets `directory_mode` (else 0755 under the umask), `owner` and `group`, and so
do the folders above `dest` it makes; every folder of the source gets `directory_mode`,
`owner` and `group` again on every run, but `dest` itself, once there, is left alone;
`mode` applies to the files only (`preserve`: each source file's own mode); registers
`dest` (with a final /), `src` and `changed`, or the file's own result where the folder
holds exactly one file and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.base import Fact, Plan, Push, World, q
from pctfleet.modules.file import PathState, attribute_fixes
from pctfleet.modules.modes import Mode, stat_text, wanted_mode
from pctfleet.sh import snippet

# Entries a copied folder may hold: each is a path in the probe, on every run.
TREE_LIMIT = 10_000


@dataclass(frozen=True)
class TreeFile:
    """A file to copy: where it goes (relative), its bytes and the source's own mode."""

    rel: str
    data: bytes = field(repr=False)
    mode: str  # 4-digit octal, for `mode: preserve`
    sha256: str = ""


@dataclass(frozen=True)
class Tree:
    """A controller folder as ansible-core's copy action walks it."""

    shown: str  # the source as registered: its path, the final / as written
    top: str  # '' for `src: conf/`; `conf` for `src: conf` (made in dest, left alone after)
    files: tuple[TreeFile, ...] = ()
    dirs: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()  # (relative path, target)


def walk(path: Path, slash: bool, follow: bool, where: str) -> Tree:
    """`path` (a folder) walked with ansible-core's rules; `slash`: its contents only."""
    files: list[TreeFile] = []
    dirs: list[str] = []
    links: list[tuple[str, str]] = []
    for kind, rel, real in _entries(path, "" if slash else path.name, follow, where):
        if kind == "dir":
            dirs.append(rel)
        elif kind == "link":
            links.append((rel, real))
        else:
            files.append(_read(real, rel, where))
    shown = str(path) + ("/" if slash else "")
    return Tree(shown, "" if slash else path.name, tuple(files), tuple(dirs), tuple(links))


def stamp(path: Path, slash: bool, follow: bool) -> tuple:
    """What decides a walked folder: every entry and the stat of what it reads (a write
    changes a file's ctime). Raises PlaybookError (a folder too large, a fifo)."""
    out: list[tuple] = []
    for kind, rel, real in _entries(path, "" if slash else path.name, follow, ""):
        if kind == "file":
            info = os.stat(real)
            out.append((rel, real, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
        else:
            out.append((kind, rel, real))
    return tuple(out)


def _read(real: str, rel: str, where: str) -> TreeFile:
    try:
        info = os.stat(real)
        data = Path(real).read_bytes()
    except OSError as exc:
        raise PlaybookError(f"copy: cannot read {real}: {exc.strerror}", where=where) from None
    mode = f"{stat.S_IMODE(info.st_mode):04o}"
    return TreeFile(rel, data, mode, hashlib.sha256(data).hexdigest())


def _entries(path: Path, top: str, follow: bool, where: str) -> list[tuple[str, str, str]]:
    """(file, relative path, the real file) / (dir, path, '') / (link, path, target), in
    os.walk's order: a link to a file is that file (with `follow`), a link to a folder is
    walked unless it loops back into the copy, any other link is made as it is."""
    found: list[tuple[str, str, str]] = []

    def recurse(folder: str, base: str, parents: frozenset) -> None:
        for here, subdirs, names in os.walk(folder):
            inner = os.path.relpath(here, folder)
            rel_here = base if inner == "." else posixpath.join(base, inner)
            for name in sorted(names):
                full, rel = os.path.join(here, name), posixpath.join(rel_here, name)
                real = os.path.realpath(full)
                if os.path.islink(full) and not (follow and os.path.isfile(real)):
                    found.append(("link", rel, os.readlink(full)))
                elif not stat.S_ISREG(os.stat(real).st_mode):
                    message = f"copy: {full} is not a regular file, a folder or a link"
                    raise PlaybookError(message, where=where)
                else:
                    found.append(("file", rel, real))
            subdirs.sort()
            for name in subdirs:
                full, rel = os.path.join(here, name), posixpath.join(rel_here, name)
                if not os.path.islink(full):
                    found.append(("dir", rel, ""))
                    continue
                target = _inode(os.path.realpath(full))
                above = _new_parents(here, parents) if follow and target not in parents else ()
                if not follow or target in parents or target in above:  # made as the link
                    found.append(("link", rel, os.readlink(full)))
                    continue
                found.append(("dir", rel, ""))
                recurse(os.path.realpath(full), rel, parents | above)
            if len(found) > TREE_LIMIT:
                raise PlaybookError(
                    f"copy: {path} holds more than {TREE_LIMIT} entries: copy an archive "
                    "with unarchive instead",
                    where=where,
                )

    recurse(str(path), top, frozenset({_inode(str(path))}))
    return found


def _inode(path: str) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _new_parents(folder: str, known: frozenset) -> frozenset:
    """The folders above a link (its own folder first) up to the first one the copy
    walks already: a link to one of them loops back (ansible-core's rule)."""
    found: set = set()
    parts = folder.split(os.sep)
    for end in range(len(parts), 0, -1):
        key = _inode(os.sep.join(parts[:end]) or os.sep)
        if key in known:
            break
        found.add(key)
    return frozenset(found)


@dataclass(frozen=True)
class Slot:
    """A path the probe reads: a folder above or at `dest` (`above`), the folder a
    `src` without / makes (`top`), or one of the source's folders, files or links."""

    path: str
    role: str  # above | top | dir | file | link
    item: Any = None  # the TreeFile, or the link's target


def slots(tree: Tree, dest: str) -> list[Slot]:
    """Every path the copy decides about, folders before what they hold."""
    base = dest.rstrip("/") or "/"
    found = [Slot(p, "above") for p in above(base)]
    if tree.top:
        found.append(Slot(posixpath.join(base, tree.top), "top"))
    found += [Slot(posixpath.join(base, rel), "dir") for rel in tree.dirs]
    found += [Slot(posixpath.join(base, f.rel), "file", f) for f in tree.files]
    found += [Slot(posixpath.join(base, rel), "link", target) for rel, target in tree.links]
    return found


def above(base: str) -> list[str]:
    """`/a/b/c` -> [/a, /a/b, /a/b/c]."""
    parts = [p for p in base.split("/") if p]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass(frozen=True)
class Seen:
    """One path as the probe found it."""

    kind: str = "a"  # a absent | l link | d folder | f regular file | o other
    mode: str = ""
    owner: str = ""
    group: str = ""
    sha256: str = ""
    target: str = ""

    @property
    def attributes(self) -> PathState:
        kind = "directory" if self.kind == "d" else "file"  # chown leaves a folder's set-id bits
        return PathState(kind, "", self.mode, self.owner, self.group)


@dataclass(frozen=True)
class TreeReading:
    """What the tree's probe printed, per path in `slots` order (empty: nothing read)."""

    seen: tuple[Seen, ...] = ()

    def at(self, index: int) -> Seen:
        return self.seen[index] if index < len(self.seen) else Seen()


def probe(tree: Tree, dest: str) -> str:
    return snippet("copy_tree_fact", argv=[s.path for s in slots(tree, dest)], KINDS_ONLY=0)


def _lines(text: str) -> list[str]:
    """The probe's lines, split at line feeds only: sha256sum and stat end each line
    with one, and a file name may hold any other line separator (U+2028, \\f, ...)."""
    return text.split("\n") if text else []


def parse(reading: Fact) -> TreeReading:
    """Each path's kind, attributes, sha256 and link target. Lines that do not pair up
    (a path changed between the probe's passes) leave attributes and sums unknown:
    every file is then written again, never wrongly kept."""
    fields = reading.fields()
    kinds = fields.get("kinds", "")
    stats = [line.split(" ") for line in _lines(fields.get("stat", ""))]
    sums = [line.lstrip("\\")[:64] for line in _lines(fields.get("sums", ""))]
    present = [i for i, k in enumerate(kinds) if k != "a"]
    regular = [i for i, k in enumerate(kinds) if k == "f"]
    if len(stats) != len(present) or any(len(s) != 3 for s in stats):
        stats, present = [], []
    if len(sums) != len(regular):
        sums, regular = [], []
    attrs = dict(zip(present, stats, strict=True))
    hashes = dict(zip(regular, sums, strict=True))
    seen = []
    for i, kind in enumerate(kinds):
        mode, owner, group = attrs.get(i, ("", "", ""))
        seen.append(
            Seen(
                kind,
                mode.zfill(4) if mode else "",
                owner,
                group,
                hashes.get(i, ""),
                fields.get(f"target{i}", ""),
            )
        )
    return TreeReading(tuple(seen))


def converged(args: Any, world: World) -> dict[str, str]:
    """The fields a container where the copy is done prints (the simulated fleet's
    answer, and the harness's idempotence check)."""
    tree: Tree = args.tree
    kinds, stats, sums, fields = "", [], [], {}
    owner, group = args.owner or "root", args.group or "root"
    for i, slot in enumerate(slots(tree, args.dest)):
        if slot.role == "link":
            kinds += "l"
            stats.append(f"777 {owner} {group}")
            fields[f"target{i}"] = slot.item
        elif slot.role == "file":
            kinds += "f"
            wanted = slot.item.mode if args.preserve else wanted_mode(args.mode, "")
            stats.append(f"{stat_text(wanted or '0644')} {owner} {group}")
            sums.append(f"{slot.item.sha256}  {slot.path}")
            world.files[slot.path] = slot.item.data
        else:
            kinds += "d"
            wanted = wanted_mode(args.directory_mode, "", True) or "0755"
            mine = slot.role != "above"
            stats.append(
                f"{stat_text(wanted)} {owner if mine else 'root'} {group if mine else 'root'}"
            )
    return fields | {"kinds": kinds, "stat": "\n".join(stats), "sums": "\n".join(sums)}


def plan(args: Any, reading: TreeReading, check: bool) -> Plan:
    """Folders made and fixed, changed files pushed, links made, as ansible-core's
    copy action leaves them; a path of the wrong kind fails before anything changes."""
    found = slots(args.tree, args.dest)
    if len(reading.seen) != len(found):  # never guess: a folder taken for missing is chowned
        message = f"copy: the probe read {len(reading.seen)} of the {len(found)} paths it needs"
        return Plan(False, failed=True, msg=message)
    pairs = [(slot, reading.at(i)) for i, slot in enumerate(found)]
    refused = _refused(pairs)
    if refused:
        return Plan(False, failed=True, msg=refused)
    lines: list[str] = []
    pushes: list[Push] = []
    shown: list[str] = []
    for slot, seen in pairs:
        if slot.role in ("above", "top", "dir"):
            _folder(args, slot, seen, lines, shown)
        elif slot.role == "file":
            _file(args, slot, seen, pushes, lines, shown)
        else:
            _link(args, slot, seen, lines, shown)
    result = _registered(args, pairs, pushes)
    if not lines and not pushes:
        return Plan(False, result=result)
    script = "set -e\n" + "\n".join(lines) + "\n" if lines else None
    diff = {"path": args.dest, "before": "", "after": "".join(f"{s}\n" for s in shown)}
    return Plan(True, script=script, pushes=pushes, diff=diff, result=result)


def _refused(pairs: list[tuple[Slot, Seen]]) -> str:
    """Why the copy cannot go ahead ('' when it can): a folder's place taken by something
    else, or a folder where a file or link goes."""
    for slot, seen in pairs:
        if slot.role == "above" and seen.kind in ("f", "o"):
            return f"Destination {slot.path} exists and is not a directory"
        if slot.role in ("top", "dir") and seen.kind in ("f", "o", "l"):
            what = "a link" if seen.kind == "l" else "not a directory"
            return f"Destination {slot.path} is {what}; the source has a folder there"
        if slot.role in ("file", "link") and seen.kind == "d":
            return f"Destination {slot.path} is a directory; the source has a file there"
    return ""


def _folder(args: Any, slot: Slot, seen: Seen, lines: list, shown: list) -> None:
    if seen.kind == "a":
        lines += new_folder(slot.path, args.directory_mode, args.owner, args.group)
        shown.append(f"{slot.path}/ created")
        return
    if slot.role != "dir":  # dest and the folders above it, once there, are left alone
        return
    wanted = wanted_mode(args.directory_mode, seen.mode, True)
    fixes, diff = attribute_fixes(
        slot.path, seen.attributes, wanted, args.owner, args.group, args.directory_mode
    )
    if fixes:
        lines += fixes
        shown.append(f"{slot.path}/ {_changes(diff)}")


def new_folder(path: str, mode: Mode | None, owner: str | None, group: str | None) -> list[str]:
    """Shell lines making a folder (or finding it made by a push's `mkdir -p`) with
    `directory_mode` (resolved from 0755, what the umask leaves), `owner` and `group`."""
    made = PathState("directory", "", "0755", "root", "root")
    fixes, _ = attribute_fixes(path, made, wanted_mode(mode, "", True), owner, group)
    return [f"mkdir -p -- {q(path)}", *fixes]


def _file(args: Any, slot: Slot, seen: Seen, pushes: list, lines: list, shown: list) -> None:
    item: TreeFile = slot.item
    if seen.kind != "a" and not args.force:
        return
    current = seen.mode if seen.kind == "f" else ""
    wanted = item.mode if args.preserve else wanted_mode(args.mode, current)
    if seen.kind != "f" or seen.sha256 != item.sha256:
        mode = wanted or current or "0644"
        pushes.append(Push(slot.path, item.data, mode, args.push_owner, args.validate or ""))
        shown.append(f"{slot.path} {'written' if seen.kind == 'a' else 'replaced'}")
        return
    symbolic = None if args.preserve else args.mode
    fixes, diff = attribute_fixes(
        slot.path, seen.attributes, wanted, args.owner, args.group, symbolic
    )
    if fixes:
        lines += fixes
        shown.append(f"{slot.path} {_changes(diff)}")


def _link(args: Any, slot: Slot, seen: Seen, lines: list, shown: list) -> None:
    target: str = slot.item
    fresh = seen.kind != "l" or seen.target != target
    if fresh:
        lines.append(f"ln -sfn -- {q(target)} {q(slot.path)}")
        shown.append(f"{slot.path} -> {target}")
    for key, tool, wanted in (("owner", "chown", args.owner), ("group", "chgrp", args.group)):
        have = "root" if fresh else getattr(seen, key)
        if wanted and have != str(wanted):
            lines.append(f"{tool} -h -- {q(wanted)} {q(slot.path)}")
            if not fresh:
                shown.append(f"{slot.path} {key} {have} -> {wanted}")


def _changes(diff: dict) -> str:
    before, after = diff["before"], diff["after"]
    return ", ".join(f"{key} {before[key]} -> {after[key]}" for key in after)


def _registered(args: Any, pairs: list[tuple[Slot, Seen]], pushes: list[Push]) -> dict:
    """ansible-core's: a folder holding exactly one file (and no folder or link)
    registers that file's copy result; any other `dest` (with its final /) and `src`."""
    tree: Tree = args.tree
    if len(tree.files) == 1 and not tree.dirs and not tree.links:
        slot, seen = next((s, x) for s, x in pairs if s.role == "file")
        if seen.kind != "a" and not args.force:
            return {"dest": args.dest.rstrip("/") + "/", "src": tree.shown}
        pushed = next((p for p in pushes if p.dest == slot.path), None)
        current = seen.mode if seen.kind == "f" else ""
        wanted = slot.item.mode if args.preserve else wanted_mode(args.mode, current)
        mode = pushed.mode if pushed else (wanted or current)
        owners = (seen.owner, seen.group) if seen.kind == "f" else ("", "")
        out = file_result(args, slot.path, slot.item.data, mode, *owners)
        if pushed:
            return out | {"md5sum": hashlib.md5(slot.item.data).hexdigest()}  # noqa: S324
        return out | {"path": slot.path}
    return {"dest": args.dest.rstrip("/") + "/", "src": tree.shown}


def file_result(
    args: Any, dest: str, data: bytes, mode: str, owner: str, group: str
) -> dict[str, Any]:
    """What ansible-core registers about the file copy or template leaves: its sha1
    `checksum`, `size`, `mode`, `owner` and `group` where known here (the task's, or
    what the probe read: `owner`, `group`), never made up."""
    out = {"dest": dest, "state": "file", "checksum": hashlib.sha1(data).hexdigest()}  # noqa: S324
    out |= {"size": len(data), "mode": mode} if mode else {"size": len(data)}
    for key, given, read in (("owner", args.owner, owner), ("group", args.group, group)):
        if given or read:
            out[key] = given or read
    return out
