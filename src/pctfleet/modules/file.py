"""`file`: directories, links, empty files, removal and attributes (Ansible's arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q
from pctfleet.modules.modes import Mode, file_mode, stat_text, wanted_mode
from pctfleet.sh import snippet

ROOT = {"owner": "root", "group": "root"}
STATES = {"file", "directory", "absent", "link", "touch"}


def stat_probe(path: str) -> str:
    return snippet("path_stat", STAT_PATH=path)


@dataclass(frozen=True)
class PathState:
    """What is at a path: its type, link target and attributes ('' where absent)."""

    type: str = "absent"  # absent | file | directory | link
    target: str = ""
    mode: str = ""
    owner: str = ""
    group: str = ""


class PathStat(FactReader[PathState]):
    """`stat` of one path, without following a link."""

    State = PathState

    def command(self, args: Any, want_diff: bool) -> str:
        return stat_probe(args.path)

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
        return {"type": kind, "mode": stat_text(mode) if mode else default, **owner}


def path_state(fields: dict[str, str]) -> PathState:
    mode = fields.get("mode", "")
    return PathState(
        type=fields.get("type", "absent"),
        target=fields.get("target", ""),
        mode=mode.zfill(4) if mode else "",
        owner=fields.get("owner", ""),
        group=fields.get("group", ""),
    )


def attribute_fixes(
    path: str, state: PathState, mode: str | None, owner: str | None, group: str | None
) -> tuple[list, dict]:
    """Shell lines that bring mode/owner/group to the wanted values, and the diff of them.

    `mode` is 4-digit octal, a symbolic one already resolved against `state.mode`
    (`modes.wanted_mode`): both sides of the comparison are numbers written alike."""
    lines, before, after = [], {}, {}
    if mode and state.mode != mode:
        lines.append(f"chmod {mode} -- {q(path)}")
        before["mode"], after["mode"] = state.mode, mode
    for key, tool, wanted in (("owner", "chown", owner), ("group", "chgrp", group)):
        have = getattr(state, key)
        if wanted and have != str(wanted):
            lines.append(f"{tool} -- {q(wanted)} {q(path)}")
            before[key], after[key] = have, str(wanted)
    return lines, {"before": before, "after": after}


@dataclass(frozen=True)
class FileArgs(Args):
    path: str = arg(required=True, aliases=("dest", "name"), convert=text)
    state: str = arg("file", choices=STATES)
    src: str | None = arg(None, convert=text)
    mode: Mode | None = arg(None, convert=file_mode)
    owner: str | None = arg(None, convert=text)
    group: str | None = arg(None, convert=text)
    force: bool = arg(False, convert=flag)
    follow: bool = arg(True, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        if self.state == "link" and not self.src:
            raise self.fail("state=link needs 'src'", where)


class File(Module, name="file", args=FileArgs, fact=PathStat()):
    def plan(self, args: FileArgs, state: PathState, check: bool) -> Plan:
        plan = self._plan(args, state)
        if not plan.failed:  # registered as ansible-core registers them
            after = "file" if args.state == "touch" else args.state
            plan.result = {"path": args.path, "state": after, **plan.result}
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
        self, first: list[str], path: str, state: PathState, args: FileArgs, after: str
    ) -> Plan:
        before = state.type
        if first:  # a new path: its attributes are all to be set
            state = PathState(type=state.type)
        directory = "directory" in (after, state.type)  # `X` gives a folder x, always
        mode = wanted_mode(args.mode, state.mode, directory)
        fixes, attr_diff = attribute_fixes(path, state, mode, args.owner, args.group)
        lines = first + fixes
        if not lines:
            return Plan(False)
        plan = self._change("\n".join(lines), before, after, path)
        plan.diff["before"] += "".join(f"{k}={v}\n" for k, v in attr_diff["before"].items())
        plan.diff["after"] += "".join(f"{k}={v}\n" for k, v in attr_diff["after"].items())
        return plan

    def _directory(self, args: FileArgs, path: str, state: PathState) -> Plan:
        if state.type not in {"absent", "directory"}:
            return Plan(
                False, failed=True, msg=f"{path} exists and is a {state.type}, not a directory"
            )
        # Each folder made on the way is new too: the same mode comes out for all of them.
        mode = wanted_mode(args.mode, "", directory=True)
        first = _make_directories(path, mode, args) if state.type == "absent" else []
        return self._with_attributes(first, path, state, args, "directory")

    def _file(self, args: FileArgs, path: str, state: PathState) -> Plan:
        return self._with_attributes([], path, state, args, "file")

    def _touch(self, args: FileArgs, path: str, state: PathState) -> Plan:
        first = [f": >> {q(path)}"] if state.type == "absent" else []
        return self._with_attributes(first, path, state, args, "file")

    def _link(self, args: FileArgs, path: str, state: PathState) -> Plan:
        src, current = str(args.src), state.type
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
