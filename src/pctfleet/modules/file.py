"""`file`: directories, links, hard links, empty files, removal, attributes and times,
with Ansible's arguments (`recurse`, `follow`, `access_time`, `modification_time`)."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q
from pctfleet.modules.filetimes import time_fixes, wall_clock
from pctfleet.modules.filetree import Entries, chown_kept_mode, parse_tree, same_id, tree_fixes
from pctfleet.modules.modes import Mode, file_mode, stat_text, wanted_mode
from pctfleet.sh import snippet

ROOT = {"owner": "root", "group": "root"}
STATES = {"file", "directory", "absent", "link", "touch", "hard"}
TIME_FORMAT = "%Y%m%d%H%M.%S"
# The states whose times a task may set (absent ignores them, as in Ansible).
TIMED = {"file", "directory", "touch", "hard"}


def stat_probe(
    path: str, *, times: bool = False, src: str = "", tree: str = "", target: str = ""
) -> str:
    """path_stat.sh for `path`: with `times` its atime/mtime; `src` (state=hard) reads
    that file too; `tree` ('P', or 'L' to follow links) sums up the entries under it;
    `target` (state=link): whether that path exists."""
    return snippet(
        "path_stat", STAT_PATH=path, STAT_TIMES="1" if times else "", STAT_SRC=src,
        STAT_TREE=tree, STAT_TARGET=target,
    )  # fmt: skip


@dataclass(frozen=True)
class PathState:
    """What is at a path: its type, link target and attributes ('' where absent)."""

    type: str = "absent"  # absent | file | directory | link
    target: str = ""
    mode: str = ""
    owner: str = ""
    group: str = ""
    uid: str = ""  # the owner's and group's ids ('' where not read)
    gid: str = ""
    links: str = ""  # the link count and dev:inode (read for state=hard)
    id: str = ""
    atime: str = ""  # `stat %x`/`%y` of what the path points to (read when times are set)
    mtime: str = ""
    at: str = ""  # state=hard into a folder: the entry inside it that is meant ('' = path)
    src: PathState | None = None  # state=hard: `src`, followed
    target_exists: bool = True  # state=link: what `src` names is there
    tree: tuple[Entries, ...] = ()  # recurse: the entries under the folder, summed up
    tree_errors: tuple[str, ...] = ()
    tree_more: bool = False  # more kinds than TREE_KINDS


class PathStat(FactReader[PathState]):
    """`stat` of one path, without following a link."""

    State = PathState

    def command(self, args: Any, want_diff: bool) -> str:
        times = args.state in TIMED and any(w is not None for w in args.times)
        src = str(args.src) if args.state == "hard" else ""
        tree = ("L" if args.follow else "P") if args.recurse else ""
        target = link_target(args.path, str(args.src)) if args.state == "link" else ""
        return stat_probe(args.path, times=times, src=src, tree=tree, target=target)

    def parse(self, reading: Fact) -> PathState:
        return path_state(reading.fields())

    def converged(self, args: FileArgs, world: World) -> dict[str, str]:
        if args.state == "absent":
            return {"type": "absent"}
        if args.state == "link":
            return {"type": "link", "target": str(args.src), "mode": "777", **ROOT}
        kind = "directory" if args.state == "directory" else "file"
        mode = wanted_mode(args.mode, "", kind == "directory")
        default = "755" if kind == "directory" else "644"
        owner = {"owner": args.owner or "root", "group": args.group or "root"}
        attrs = {"mode": stat_text(mode) if mode else default, **owner}
        times = {
            key: f"{wanted}.000000000 +0000"
            for key, wanted in zip(("atime", "mtime"), args.times, strict=True)
            if wanted not in (None, "now")
        }
        if args.state == "hard":
            src = {f"src_{key}": value for key, value in {**attrs, **times}.items()}
            return {"type": kind, **attrs, "links": "2", "id": "1:2", "src_type": "file",
                    "src_id": "1:2", **src}  # fmt: skip
        return {"type": kind, **attrs, **times}


def link_target(path: str, src: str) -> str:
    """What a link at `path` to `src` names: `src` relative to the link's folder."""
    return src if src.startswith("/") else posixpath.join(posixpath.dirname(path) or ".", src)


def path_state(fields: Mapping[str, str]) -> PathState:
    src = _attributes(fields, "src_") if "src_type" in fields else None
    tree, errors, more = parse_tree(fields.get("tree", ""))
    return PathState(
        target=fields.get("target", ""),
        links=fields.get("links", ""),
        at=fields.get("path", ""),
        src=None if src is None else PathState(**src),
        tree=tree,
        tree_errors=errors,
        tree_more=more,
        target_exists=fields.get("target_exists", "1") == "1",
        **_attributes(fields, ""),
    )


def _attributes(fields: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The probe's `type`, `mode`, owner, ids and times of the path (or, with prefix
    `src_`, of state=hard's source)."""
    read = {key: fields.get(prefix + key, "") for key in _ATTRIBUTES}
    read["type"] = fields.get(prefix + "type", "absent")
    read["mode"] = read["mode"].zfill(4) if read["mode"] else ""
    return read


_ATTRIBUTES = ("mode", "owner", "group", "uid", "gid", "id", "atime", "mtime")


def attribute_fixes(
    path: str,
    state: PathState,
    mode: str | None,
    owner: str | None,
    group: str | None,
    symbolic: Mode | None = None,
) -> tuple[list, dict]:
    """Shell lines that bring mode/owner/group to the wanted values, and the diff of them.

    `mode` is 4-digit octal, a symbolic one already resolved against `state.mode`
    (`modes.wanted_mode`): both sides of the comparison are numbers written alike.
    ansible-core's order: owner, group, then the mode, compared with what chown left
    (Linux drops a file's set-user-ID, and set-group-ID with group execute), a
    `symbolic` mode (the task's, that `mode` was resolved from) resolved again
    against that."""
    lines, before, after = [], {}, {}
    for key, tool, wanted, number in (
        ("owner", "chown", owner, state.uid),
        ("group", "chgrp", group, state.gid),
    ):
        have = getattr(state, key)
        if wanted and not same_id(str(wanted), number, have):
            lines.append(f"{tool} -- {q(wanted)} {q(path)}")
            before[key], after[key] = have, str(wanted)
    left = state.mode
    if lines and left and state.type != "directory":
        left = f"{chown_kept_mode(int(left, 8)):04o}"
        mode = f"{symbolic.resolve(int(left, 8), False):04o}" if symbolic and mode else mode
    if mode and left != mode:
        lines.append(f"chmod {mode} -- {q(path)}")
        before["mode"], after["mode"] = state.mode, mode
    return lines, {"before": before, "after": after}


@dataclass(frozen=True)
class FileArgs(Args):
    path: str = arg(required=True, aliases=("dest", "name"), convert=text)
    # None: Ansible's default, `directory` with recurse, else `file` (set by parse).
    state: str = arg(None, choices=STATES)
    src: str | None = arg(None, convert=text)
    mode: Mode | None = arg(None, convert=file_mode)
    owner: str | None = arg(None, convert=text)
    group: str | None = arg(None, convert=text)
    force: bool = arg(False, convert=flag)
    follow: bool = arg(True, convert=flag)
    recurse: bool = arg(False, convert=flag)
    access_time: str | None = arg(None, convert=text)
    access_time_format: str = arg(TIME_FORMAT, convert=text)
    modification_time: str | None = arg(None, convert=text)
    modification_time_format: str = arg(TIME_FORMAT, convert=text)
    # The wanted (atime, mtime), each None (preserve), 'now' or a wall-clock second.
    times: tuple = dataclasses.field(default=(None, None))

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        state = args.state or ("directory" if args.recurse else "file")
        args = dataclasses.replace(args, state=state)
        return dataclasses.replace(args, times=args.wanted_times(where))

    def check(self, ctx: Context, where: str) -> None:
        state = self.state or ("directory" if self.recurse else "file")
        if state in ("link", "hard") and not self.src:
            raise self.fail(f"state={state} needs 'src'", where)
        if self.src and state not in ("link", "hard"):
            raise self.fail("src option requires state to be 'link' or 'hard'", where)
        if self.recurse and state != "directory":
            raise self.fail("recurse option requires state to be 'directory'", where)

    def wanted_times(self, where: str) -> tuple:
        """(atime, mtime) as `wall_clock` gives them. state=touch changes neither unless
        the task names one (pctfleet's default, see docs/playbooks.md); once it names
        one, the other is Ansible's `now`."""
        if self.state == "absent":  # never read, as in Ansible
            return (None, None)
        named = self.access_time is not None or self.modification_time is not None
        default = "now" if self.state == "touch" and named else "preserve"
        wanted = []
        for name in ("access_time", "modification_time"):
            value = getattr(self, name)
            fmt = getattr(self, f"{name}_format")
            try:
                wanted.append(wall_clock(default if value is None else value, fmt))
            except (ValueError, OverflowError) as err:
                raise self.fail(
                    f"Error while obtaining timestamp for time {value} using format {fmt}: {err}",
                    where,
                ) from None
            if wanted[-1] is not None and (self.recurse or self.state == "link"):
                how = "recurse" if self.recurse else "state=link"
                raise self.fail(f"{name} with {how} is not supported; leave it out", where)
        return tuple(wanted)


class File(Module, name="file", args=FileArgs, fact=PathStat()):
    registers_output = registers_msg = False

    def plan(self, args: FileArgs, state: PathState, check: bool) -> Plan:
        plan = self._plan(args, state)
        if not plan.failed:  # registered as ansible-core registers them
            if args.state == "hard":
                kept = "link" if state.type == "link" and state.target == args.src else "hard"
                plan.result = {"dest": state.at or args.path, "src": args.src, "state": kept}
            else:
                after = "file" if args.state == "touch" else args.state
                key = "dest" if args.state in ("touch", "link") else "path"
                named = {"src": args.src} if args.state == "link" else {}
                attributes = _registered(args, state)
                plan.result = {key: args.path, "state": after, **named, **attributes, **plan.result}
        return plan

    def _plan(self, args: FileArgs, state: PathState) -> Plan:
        path, current = args.path, state.type
        if args.state == "absent":
            if current == "absent":
                return Plan(False)
            return self._change(f"rm -rf -- {q(path)}", current, "absent", path)
        if args.state == "file" and current == "absent":
            return Plan(False, failed=True, msg=f"file {path} does not exist (state=touch creates)")
        return getattr(self, f"_{args.state}")(args, path, state)

    def _change(self, script: str, before: str, after: str, path: str, msg: str = "") -> Plan:
        diff = {"path": path, "before": f"state={before}\n", "after": f"state={after}\n"}
        return Plan(True, script=f"set -e\n{script}\n", diff=diff, msg=msg)

    def _with_attributes(
        self,
        first: list[str],
        path: str,
        state: PathState,
        args: FileArgs,
        after: str,
        more: tuple[list[str], str, str] = ([], "", ""),
        before: str | None = None,
        new: bool | None = None,
    ) -> Plan:
        """`first` (what makes the path), then its mode, owner and group, then `more`
        (what recurse changes under it), then its times; no change when all are empty.
        `state` holds the attributes and times the path has once `first` ran (`new`,
        by default when there is a `first`: none, all are to be set)."""
        before = state.type if before is None else before
        if first if new is None else new:
            state = PathState(type=state.type)
        directory = "directory" in (after, state.type)  # `X` gives a folder x, always
        mode = wanted_mode(args.mode, state.mode, directory)
        fixes, attr_diff = attribute_fixes(path, state, mode, args.owner, args.group, args.mode)
        touches, old_times, new_times = time_fixes(path, args.times, (state.atime, state.mtime))
        lines = first + fixes + more[0] + touches
        if not lines:
            return Plan(False)
        plan = self._change("\n".join(lines), before, after, path)
        olds, news = {**attr_diff["before"], **old_times}, {**attr_diff["after"], **new_times}
        plan.diff["before"] += "".join(f"{k}={v}\n" for k, v in olds.items()) + more[1]
        plan.diff["after"] += "".join(f"{k}={v}\n" for k, v in news.items()) + more[2]
        return plan

    def _directory(self, args: FileArgs, path: str, state: PathState) -> Plan:
        if state.type not in {"absent", "directory"}:
            return Plan(
                False, failed=True, msg=f"{path} exists and is a {state.type}, not a directory"
            )
        more: tuple[list[str], str, str] = ([], "", "")
        if args.recurse and state.type == "directory":
            found = tree_fixes(args, path, state)
            if isinstance(found, str):
                return Plan(False, failed=True, msg=found)
            more = found
        # Each folder made on the way is new too: the same mode comes out for all of them.
        mode = wanted_mode(args.mode, "", directory=True)
        first = _make_directories(path, mode, args) if state.type == "absent" else []
        return self._with_attributes(first, path, state, args, "directory", more)

    def _file(self, args: FileArgs, path: str, state: PathState) -> Plan:
        return self._with_attributes([], path, state, args, "file")

    def _touch(self, args: FileArgs, path: str, state: PathState) -> Plan:
        first = [f": >> {q(path)}"] if state.type == "absent" else []
        return self._with_attributes(first, path, state, args, "file")

    def _link(self, args: FileArgs, path: str, state: PathState) -> Plan:
        src, current = str(args.src), state.type
        if not state.target_exists and not args.force:  # as ansible-core, re-run too
            return Plan(
                False,
                failed=True,
                msg="src file does not exist, use 'force=yes' if you really want to create "
                f"the link: {link_target(path, src)}",
            )
        if current == "link" and state.target == src:
            return Plan(False)
        if current not in {"absent", "link"} and not args.force:
            return Plan(
                False,
                failed=True,
                msg=f"{path} exists and is a {current}; set force: true to replace it",
            )
        # Build the link beside the old one and rename over it: readers never see a gap.
        tmp = f"{path}.pctfleet-tmp"
        lines = [f"rm -rf -- {q(tmp)}", f"ln -s -- {q(src)} {q(tmp)}"]
        if current not in {"absent", "link"}:
            lines.append(f"rm -rf -- {q(path)}")
        lines.append(f"mv -Tf -- {q(tmp)} {q(path)}")
        before = f"link -> {state.target}" if current == "link" else current
        return self._change("\n".join(lines), before, f"link -> {src}", path)

    def _hard(self, args: FileArgs, path: str, state: PathState) -> Plan:
        """A hard link at `path` (or, where a folder is, inside it under src's name) to
        `src`, decided as ansible-core decides it: by inode; a file or another hard link
        in the way needs `force`; a symbolic link is replaced (one to `src`, as written,
        is left). The attributes and times then apply to the linked file."""
        src, path = str(args.src), state.at or path
        have = _ansible_state(state)
        source = state.src or PathState()
        if source.type == "absent":
            return Plan(False, failed=True, msg="src does not exist")
        link = have != "link" or state.target != src
        if have == "directory":
            if state.id == source.id:
                return Plan(False)
            words = "Cannot link: different hard link exists at destination"
            why = words if not args.force else f"Error while replacing: {path} is a directory"
            return Plan(False, failed=True, msg=why)
        if have == "hard" and state.id == source.id:
            link = False
        elif have in ("hard", "file") and not args.force:
            other = "different hard link" if have == "hard" else "file"
            return Plan(False, failed=True, msg=f"Cannot link, {other} exists at destination")
        if link and source.type == "directory":
            return Plan(
                False,
                failed=True,
                msg=f"Error while linking: hard link not allowed for directory: {src} -> {path}",
            )
        first = []
        if link and have == "absent":
            first = [f"ln -L -- {q(src)} {q(path)}"]
        elif link:  # beside it, then renamed over it: never a moment without a file there
            tmp = q(f"{path}.pctfleet-tmp")
            first = [f"rm -f -- {tmp}", f"ln -L -- {q(src)} {tmp}", f"mv -Tf -- {tmp} {q(path)}"]
        # Once linked, the path is src's inode: its attributes and times are src's.
        linked = dataclasses.replace(source, type="file")
        before = have if have != "link" else f"link -> {state.target}"
        return self._with_attributes(first, path, linked, args, "hard", before=before, new=False)


def _registered(args: FileArgs, state: PathState) -> dict[str, Any]:
    """The path's mode, owner and group once the task ran, and its uid and gid where
    the probe read them and the task keeps them, as ansible-core registers them (its
    `size` is not read, so not registered)."""
    if args.state == "absent":
        return {}
    if args.state == "link":  # the link's own (a new one is root's: pct exec runs as root)
        linked = state.type == "link"
        found = {"mode": "0777", "owner": state.owner if linked else "root"}
        found |= {"group": state.group if linked else "root"}
        ids = (state.uid, state.gid) if linked else ("0", "0")
        return found | {k: int(v) for k, v in zip(("uid", "gid"), ids, strict=True) if v.isdigit()}
    there = state.type != "absent"
    directory = "directory" in (args.state, state.type)
    mode = wanted_mode(args.mode, state.mode if there else "", directory)
    mode = mode or (state.mode if there else ("0755" if directory else "0644"))
    found: dict[str, Any] = {"mode": mode}
    for key, number, wanted in (("owner", "uid", args.owner), ("group", "gid", args.group)):
        have, have_id = (getattr(state, key), getattr(state, number)) if there else ("root", "0")
        kept = not wanted or same_id(str(wanted), have_id, have)
        found[key] = have if kept else str(wanted)
        if kept and have_id.isdigit():
            found[number] = int(have_id)
    return found


def _ansible_state(state: PathState) -> str:
    """ansible-core's name for what is at a path: a file with more than one link is
    `hard`."""
    if state.type == "file" and state.links.isdigit() and int(state.links) > 1:
        return "hard"
    return state.type


def _make_directories(path: str, mode: str | None, args: FileArgs) -> list[str]:
    """`mkdir -p`, except that, as in Ansible, each folder it creates on the way gets the
    task's mode (`mode`, resolved for a new folder), owner and group too (not only the
    last one)."""
    fixes = [f"chmod {q(mode)}" if mode else ""]
    owner = f"{args.owner or ''}:{args.group}" if args.group else (args.owner or "")
    fixes.append(f"chown {q(owner)}" if owner else "")
    fixes = [fix for fix in fixes if fix]
    if not fixes:
        return [f"mkdir -p -- {q(path)}"]
    lines, parts = [], [p for p in path.split("/") if p]
    for depth in range(1, len(parts) + 1):
        folder = q("/" + "/".join(parts[:depth]))
        made = " && ".join([f"mkdir -- {folder}", *(f"{fix} -- {folder}" for fix in fixes)])
        lines.append(f"[ -e {folder} ] || {{ {made}; }}")
    return lines
