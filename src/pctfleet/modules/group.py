"""`group`: a local group present (with its gid) or absent, from `getent group`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pctfleet.errors import PlaybookError, brief
from pctfleet.modules.args import Args, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q
from pctfleet.sh import snippet

# What useradd/groupadd accept (shadow-utils' default NAME_REGEX, plus a final `$`).
_ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?\Z")


def account(value: object, where: str) -> str:
    """A user or group name; anything useradd would refuse (spaces, quotes) is refused here."""
    name = text(value, where)
    if not _ACCOUNT.match(name):
        raise PlaybookError(f"not a valid user or group name: {brief(name)}", where=where)
    return name


def whole(value: object, where: str) -> int:
    if isinstance(value, bool) or not str(value).isdigit():
        raise PlaybookError(f"expected a whole number >= 0, got {brief(value)}", where=where)
    return int(value)


@dataclass(frozen=True)
class GroupArgs(Args):
    name: str = arg(required=True, convert=account)
    state: str = arg("present", choices={"present", "absent"})
    gid: int | None = arg(None, convert=whole)
    system: bool = arg(False, convert=flag)
    force: bool = arg(False, convert=flag)
    local: bool = arg(False, convert=flag)  # accepted: groupadd already writes /etc/group
    non_unique: bool = arg(False, convert=flag)


@dataclass(frozen=True)
class GroupEntry:
    line: str = ""  # `name:x:gid:members`, empty where there is no such group

    @property
    def gid(self) -> int | None:
        parts = self.line.split(":")
        return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None


class GroupFact(FactReader[GroupEntry]):
    State = GroupEntry

    def command(self, args: GroupArgs, want_diff: bool) -> str:
        return snippet("account_fact", ACCOUNT=args.name, KIND="group", PASSWORD=0)

    def parse(self, reading: Fact) -> GroupEntry:
        return GroupEntry(reading.fields().get("group", ""))

    def converged(self, args: GroupArgs, world: World) -> dict[str, str]:
        if args.state == "absent":
            return {}
        return {"group": f"{args.name}:x:{args.gid if args.gid is not None else 1000}:"}


class Group(Module, name="group", args=GroupArgs, fact=GroupFact()):
    """Ensure a local group exists (with a gid) or does not; registers Ansible's fields."""

    registers_output = registers_msg = False

    def plan(self, args: GroupArgs, state: GroupEntry, check: bool) -> Plan:
        result = {"name": args.name, "state": args.state}
        if args.state == "absent":
            script = f"groupdel {'-f ' if args.force else ''}-- {q(args.name)}\n"
            return Plan(bool(state.line), script=script if state.line else None, result=result)
        result |= {"system": args.system, "gid": args.gid if args.gid is not None else state.gid}
        options = f"-g {args.gid} " if args.gid is not None else ""
        options += "-o " if args.non_unique and args.gid is not None else ""
        if not state.line:
            script = f"groupadd {options}{'-r ' if args.system else ''}-- {q(args.name)}\n"
            return Plan(True, script=script, result=result)
        if args.gid is not None and args.gid != state.gid:
            return Plan(True, script=f"groupmod {options}-- {q(args.name)}\n", result=result)
        return Plan(False, result=result)
