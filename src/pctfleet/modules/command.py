"""`command` and `shell`, with Ansible's arguments (`creates`, `removes`, `chdir`,
`stdin`, `stdin_add_newline`, `strip_empty_ends`, `expand_argument_vars`)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, flag, text
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
    stdin_add_newline: bool = arg(True, convert=flag)
    strip_empty_ends: bool = arg(True, convert=flag)
    expand_argument_vars: bool = arg(True, convert=flag)

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


def _skipped(args: CommandArgs, guards: Guards | None, check: bool) -> Plan | None:
    """Not run, said and registered as ansible-core says it."""
    if guards and (guards.created or guards.removed):
        path, why = (args.creates, "exists") if guards.created else (args.removes, "does not exist")
        msg = f"{'Would' if check else 'Did'} not run command since '{path}' {why}"
        return Plan(False, msg=msg, result={"rc": 0, "stdout": f"skipped, since {path} {why}"})
    return None


def _run(args: CommandArgs, line: str) -> Plan:
    """The change: `line` exec'd in `chdir`, fed `stdin` (a line break added unless
    `stdin_add_newline: false`, as ansible-core does); check mode leaves it to the runner."""
    chdir = f"cd {q(args.chdir)} || exit 1\n" if args.chdir else ""
    stdin = (args.stdin or "") + ("\n" if args.stdin and args.stdin_add_newline else "")
    # ansible-core in check mode: skipped, unless creates/removes say it would change.
    guarded = bool(args.creates or args.removes)
    helper = PF_ENV if "$(pf_env " in line else ""
    script = f"{chdir}{helper}exec {line}\n"
    return Plan(True, script=script, skip_in_check=not guarded, stdin=stdin.encode())


def _checked(plan: Plan) -> dict:
    """What ansible-core registers for a command check mode did not run."""
    done = {"rc": 0, "msg": "Command would have run if not in check mode"}
    return done | ({"skipped": True, "changed": False} if plan.skip_in_check else {})


# Python's os.path.expandvars, which ansible-core's command module applies to each word.
_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)
_SH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER = re.compile(r"~[A-Za-z0-9._-]*(?=/|$)")


def expanded_word(word: str) -> str:
    """sh code for `word` as ansible-core's command module passes it on: `$NAME` and
    `${NAME}` of a variable in the container's environment replaced (left as written
    when it is not; `pf_env`, see PF_ENV), then a leading `~` or `~user` made that home.
    Everything else stays quoted."""
    code, rest = "", word
    if home := _USER.match(word):
        tilde = home.group()
        code, rest = ('"$HOME"' if tilde == "~" else tilde), word[len(tilde) :]
    position = 0
    for found in _VARIABLE.finditer(rest):
        name = found.group(1).strip("{}") if found.group(1).startswith("{") else found.group(1)
        if not _SH_NAME.fullmatch(name):
            continue
        code += q(rest[position : found.start()]) if found.start() > position else ""
        code += f'"$(pf_env {name} {q(found.group())})"'
        position = found.end()
    tail = rest[position:]
    return code + (q(tail) if tail or not code else "")


# The environment's value of $1 (exported: the shell's own variables, IFS or the
# script's, are not the environment Python's expandvars reads), its final line breaks
# kept; else $2, the word as written.
PF_ENV = (
    'pf_env() { if printenv "$1" > /dev/null; then v=$(printenv "$1"; echo x); '
    "printf '%s' \"${v%?x}\"; else printf '%s' \"$2\"; fi; }\n"
)


class Command(Module, name="command", args=CommandArgs, fact=GuardFact()):
    """Run a program without a shell: `command: ls -la /opt` or `argv: [ls, -la]`."""

    changed_when_failed = True

    def plan(self, args: CommandArgs, state: Guards | None, check: bool) -> Plan:
        argv = args.argv or tuple(shlex.split(args.cmd))
        spell = expanded_word if args.expand_argument_vars else q
        return _skipped(args, state, check) or _run(args, " ".join(spell(word) for word in argv))

    def finish(self, args: CommandArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        return _finished(super().finish(args, plan, rc, out, err), args, out, err)

    def checked(self, args: CommandArgs, plan: Plan) -> dict:
        return _checked(plan)


class Shell(Module, name="shell", args=ShellArgs, fact=GuardFact()):
    """Run a line through /bin/sh: pipes, redirections and variables work."""

    changed_when_failed = True

    def plan(self, args: ShellArgs, state: Guards | None, check: bool) -> Plan:
        shell = args.executable or "/bin/sh"
        return _skipped(args, state, check) or _run(args, f"{q(shell)} -c {q(args.cmd)}")

    def finish(self, args: CommandArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        return _finished(super().finish(args, plan, rc, out, err), args, out, err)

    def checked(self, args: CommandArgs, plan: Plan) -> dict:
        return _checked(plan)


def _finished(result: dict, args: CommandArgs, out: str, err: str) -> dict:
    """`strip_empty_ends: false` keeps the output's final line breaks."""
    if not args.strip_empty_ends:
        result |= {"stdout": out, "stderr": err}
    return result
