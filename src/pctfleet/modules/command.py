"""`command` and `shell`, with Ansible's arguments (`creates`, `removes`, `chdir`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q, words
from pctfleet.sh import snippet


def _words(value: Any, where: str) -> tuple[str, ...]:
    return tuple(str(item) for item in value)


@dataclass(frozen=True)
class CommandArgs(Args):
    cmd: str = arg("", convert=text)
    argv: tuple[str, ...] = arg((), convert=_words)
    chdir: str | None = arg(None, convert=text)
    creates: str | None = arg(None, convert=text)
    removes: str | None = arg(None, convert=text)
    stdin: str | None = arg(None, convert=text)

    def check(self, ctx: Context, where: str) -> None:
        if not self.cmd and not self.argv:
            raise PlaybookError(
                f"module '{self.module}' needs a command (cmd or argv)", where=where
            )
        if self.module == "command" and not self.argv:
            words(self.cmd, "cmd", where, self.module)


@dataclass(frozen=True)
class ShellArgs(CommandArgs):
    executable: str | None = arg(None, convert=text)


@dataclass(frozen=True)
class Guards:
    """What `creates`/`removes` found: the command's work is already done."""

    created: bool = False
    removed: bool = False


class GuardFact(FactReader[Guards]):
    """`creates`/`removes` are answered by the shared probe, not by running anything."""

    def command(self, args: CommandArgs, want_diff: bool) -> str | None:  # type: ignore[override]
        if not (args.creates or args.removes):
            return None
        return snippet("command_guards", CREATES=args.creates or "", REMOVES=args.removes or "")

    def parse(self, reading: Fact) -> Guards:
        fields = reading.fields()
        return Guards(
            created=bool(fields.get("creates")), removed=bool(fields.get("removes_missing"))
        )

    def converged(self, args: CommandArgs, world: World) -> dict[str, str]:
        # Where the command already ran, what it creates is there and what it removes is gone.
        done = {"creates": "1"} if args.creates else {}
        return done | ({"removes_missing": "1"} if args.removes else {})


def _skipped(args: CommandArgs, guards: Guards | None) -> Plan | None:
    if guards and guards.created:
        return Plan(False, msg=f"skipped, since {args.creates} exists")
    if guards and guards.removed:
        return Plan(False, msg=f"skipped, since {args.removes} does not exist")
    return None


def _run(args: CommandArgs, line: str) -> Plan:
    """The change: `line` exec'd in `chdir`, fed `stdin`; check mode leaves it to the runner."""
    chdir = f"cd {q(args.chdir)} || exit 1\n" if args.chdir else ""
    stdin = args.stdin.encode() if args.stdin is not None else b""
    return Plan(True, script=f"{chdir}exec {line}\n", skip_in_check=True, stdin=stdin)


class Command(Module, name="command", args=CommandArgs, fact=GuardFact()):
    """Run a program without a shell: `command: ls -la /opt` or `argv: [ls, -la]`."""

    changed_when_failed = True

    def plan(self, args: CommandArgs, state: Guards | None, check: bool) -> Plan:
        argv = args.argv or tuple(shlex.split(args.cmd))
        return _skipped(args, state) or _run(args, " ".join(q(word) for word in argv))


class Shell(Module, name="shell", args=ShellArgs, fact=GuardFact()):
    """Run a line through /bin/sh: pipes, redirections and variables work."""

    changed_when_failed = True

    def plan(self, args: ShellArgs, state: Guards | None, check: bool) -> Plan:
        shell = args.executable or "/bin/sh"
        return _skipped(args, state) or _run(args, f"{q(shell)} -c {q(args.cmd)}")
