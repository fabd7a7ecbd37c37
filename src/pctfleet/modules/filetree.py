"""`file` with `recurse`: what the probe's summary of a folder's entries says, and the
one `find` that fixes the kinds of entry that differ, as ansible-core's recursion does."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pctfleet.modules.base import q

if TYPE_CHECKING:
    from pctfleet.modules.file import FileArgs, PathState

# At most this many distinct (type, mode, owner, group) kinds of entry under a folder
# for `recurse`: the probe prints one line per kind, not per entry, so a tree of any
# size costs a few lines; past this many kinds the task fails rather than guess.
TREE_KINDS = 4096
# find's %y letters `-type` selects by (a door or an unknown type is left alone).
FIND_TYPES = set("fdlpscb")


@dataclass(frozen=True)
class Entries:
    """One line of the probe's summary of a tree: `count` entries of one type (find's
    %y), mode, owner and group (their ids and names)."""

    count: int
    type: str
    mode: int
    uid: str
    gid: str
    user: str
    group: str


_TREE_LINE = re.compile(r"\s*(\d+) ([a-zA-Z]) ([0-7]{1,4}) (\d+) (\d+) (\S+) (\S+)")


def parse_tree(text: str) -> tuple[tuple[Entries, ...], tuple[str, ...], bool]:
    """The probe's `uniq -c` lines: the kinds of entry, anything else (find's errors),
    and whether there were more kinds than a plan takes."""
    lines = [line for line in text.split("\n") if line.strip()]
    entries, errors = [], []
    for line in lines[:TREE_KINDS]:
        found = _TREE_LINE.fullmatch(line)
        if found is None:
            errors.append(line.strip().partition(" ")[2] or line.strip())
            continue
        count, kind, mode, uid, gid, user, group = found.groups()
        entries.append(Entries(int(count), kind, int(mode, 8), uid, gid, user, group))
    return tuple(entries), tuple(errors), len(lines) > TREE_KINDS


def same_id(wanted: str, number: str, name: str) -> bool:
    """An owner or group as the task writes it (a name, or a number as Ansible reads
    one) is the path's (its id `number`, '' where unknown, and `name`)."""
    return wanted == number if wanted.isdigit() and number else wanted == name


def chown_kept_mode(mode: int) -> int:
    """What chown leaves of a non-folder's mode: Linux drops set-user-ID, and set-group-ID
    where group execute is set (ansible-core chowns before it reads the mode it changes)."""
    mode &= ~0o4000
    return mode & ~0o2000 if mode & 0o010 else mode


def tree_fixes(args: FileArgs, path: str, state: PathState) -> tuple[list[str], str, str] | str:
    """What `recurse` changes under the folder `path`, from the probe's summary of its
    entries: one `find` that selects each kind of entry that differs (by type, mode,
    owner and group) and fixes just those; links get their own owner and group (never a
    mode), and with `follow` their targets are entries too, as in ansible-core. Also
    the diff's lines, kind by kind; or the failure's message."""
    if state.tree_errors:
        return f"Could not recursively set attributes on {path}: {state.tree_errors[0]}"
    if state.tree_more:
        return (
            f"Could not recursively set attributes on {path}: more than {TREE_KINDS} kinds of "
            "entry (type, mode, owner, group) under it; pctfleet reads at most that many"
        )
    clauses, link_clauses, before, after = [], [], [], []
    for entry in state.tree:
        fix = _entry_fix(args, entry)
        if fix is None:
            continue
        clause, shown = fix
        (link_clauses if entry.type == "l" and args.follow else clauses).append(clause)
        before.append(f"under {path}: {entry.count} {entry.type} {_shown(entry)}\n")
        after.append(f"under {path}: {entry.count} {entry.type} {shown}\n")
    top = q(path if not path.startswith("-") else f"./{path}")
    lines = []
    if clauses and args.follow:  # links are followed: their targets are entries too
        lines.append(f"find -L {top} -mindepth 1 ! -type l \\( {' -o '.join(clauses)} \\)")
    elif clauses:
        lines.append(f"find {top} -mindepth 1 \\( {' -o '.join(clauses)} \\)")
    if link_clauses:  # each link's own owner, read without following it
        inner = f'find "$@" -maxdepth 0 \\( {" -o ".join(link_clauses)} \\)'
        inner = inner.replace("{}", "{\\}")  # the outer find refuses a second `{}`, even quoted
        lines.append(f"find -L {top} -mindepth 1 -xtype l -exec sh -c {q(inner)} sh {{}} +")
    return lines, "".join(before), "".join(after)


def _entry_fix(args: FileArgs, entry: Entries) -> tuple[str, str] | None:
    """The find clause that fixes the entries of one kind, and what they become; None
    when they are as wanted. ansible-core's order: owner, group, then the mode (a
    symbolic one resolved against what chown left)."""
    if entry.type not in FIND_TYPES:
        return None
    owner = args.owner if args.owner and not same_id(args.owner, entry.uid, entry.user) else None
    group = args.group if args.group and not same_id(args.group, entry.gid, entry.group) else None
    tools = []
    if owner or group:
        spec = f"{owner}:{group}" if owner and group else owner or group
        tools.append(("chown" if owner else "chgrp", "-h" if entry.type == "l" else "", spec))
    mode = entry.mode
    if entry.type not in ("l", "d") and tools:
        mode = chown_kept_mode(mode)
    wanted = None
    if args.mode is not None and entry.type != "l":
        wanted = args.mode.resolve(mode, entry.type == "d")
        if wanted != mode or (tools and entry.mode & 0o6000):
            tools.append(("chmod", "", f"{wanted:04o}"))
    if not tools:
        return None
    select = ["-type", entry.type]
    select += [] if entry.type == "l" else ["-perm", f"{entry.mode:04o}"]
    select += ["-uid", entry.uid, "-gid", entry.gid]
    became = dataclasses.replace(
        entry, mode=mode if wanted is None else wanted, user=owner or entry.user,
        group=group or entry.group,
    )  # fmt: skip
    return _clause(select, tools), _shown(became)


def _shown(entry: Entries) -> str:
    return f"{entry.mode:04o} {entry.user}:{entry.group}"


def _clause(select: list[str], tools: list[tuple[str, str, str]]) -> str:
    """`\\( SELECT -exec ... {} + \\)`: the tools run on every entry selected, in order."""
    words = " ".join(q(word) for word in select)
    if len(tools) == 1:
        tool, flags, value = tools[0]
        command = " ".join(filter(None, [tool, flags, "--", q(value)]))
        return f"\\( {words} -exec {command} {{}} + \\)"
    body = " && ".join(
        " ".join(filter(None, [tool, flags, "--", q(value), '"$@"']))
        for tool, flags, value in tools
    )
    return f"\\( {words} -exec sh -c {q(body)} sh {{}} + \\)"
