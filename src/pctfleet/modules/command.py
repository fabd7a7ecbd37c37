"""`command` and `shell`, with Ansible's arguments (`creates`, `removes`, `chdir`)."""

from __future__ import annotations

import re
import shlex
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.base import Fact, LegacyModule, Plan, q, words

_COMMON = {"cmd", "argv", "chdir", "creates", "removes", "stdin"}
# Ansible's free form: `command: make install chdir=/src creates=/usr/bin/x`.
_INLINE = re.compile(r"(?:^|\s)(creates|removes|chdir|executable)=(\S+)")


def split_inline_options(args: dict[str, Any]) -> None:
    """Move `key=value` options out of a free-form command into real arguments."""
    cmd = args.get("cmd")
    if not isinstance(cmd, str):
        return
    for key, value in _INLINE.findall(cmd):
        args.setdefault(key, value)
    args["cmd"] = _INLINE.sub("", cmd).strip()


def _guard_probe(args: dict[str, Any]) -> str | None:
    """`creates`/`removes` are answered by the shared probe, not by running anything."""
    lines = []
    if args.get("creates"):
        lines.append(f"[ -e {q(args['creates'])} ] && pf_kv creates 1")
    if args.get("removes"):
        lines.append(f"[ -e {q(args['removes'])} ] || pf_kv removes_missing 1")
    return "\n".join(lines) + "\ntrue" if lines else None


def _guard_plan(args: dict[str, Any], fact: Fact | None) -> Plan | None:
    facts = fact.fields() if fact else {}
    if facts.get("creates"):
        return Plan(False, msg=f"skipped, since {args['creates']} exists")
    if facts.get("removes_missing"):
        return Plan(False, msg=f"skipped, since {args['removes']} does not exist")
    return None


def _stdin(args: dict[str, Any]) -> bytes:
    return str(args["stdin"]).encode() if args.get("stdin") is not None else b""


def _chdir(args: dict[str, Any]) -> str:
    return f"cd {q(args['chdir'])} || exit 1\n" if args.get("chdir") else ""


class Command(LegacyModule):
    """Run a program without a shell: `command: ls -la /opt` or `argv: [ls, -la]`."""

    name = "command"
    args = _COMMON

    def validate(self, args: dict[str, Any], where: str) -> None:
        split_inline_options(args)
        if not args.get("cmd") and not args.get("argv"):
            raise PlaybookError("module 'command' needs a command (cmd or argv)", where=where)
        if self.name == "command" and not args.get("argv"):
            words(args["cmd"], "cmd", where, self.name)

    def argv(self, args: dict[str, Any]) -> list[str]:
        if args.get("argv"):
            return [str(a) for a in args["argv"]]
        return shlex.split(str(args["cmd"]))

    def probe(self, args: dict[str, Any], want_diff: bool) -> str | None:
        return _guard_probe(args)

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        skipped = _guard_plan(args, fact)
        if skipped:
            return skipped
        line = " ".join(q(word) for word in self.argv(args))
        return Plan(
            True, script=_chdir(args) + f"exec {line}\n", skip_in_check=True, stdin=_stdin(args)
        )


class Shell(Command):
    """Run a line through /bin/sh: pipes, redirections and variables work."""

    name = "shell"
    args = _COMMON | {"executable"}

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        skipped = _guard_plan(args, fact)
        if skipped:
            return skipped
        shell = args.get("executable") or "/bin/sh"
        script = _chdir(args) + f"exec {q(shell)} -c {q(args.get('cmd') or '')}\n"
        return Plan(True, script=script, skip_in_check=True, stdin=_stdin(args))
