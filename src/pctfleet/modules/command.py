"""`command` and `shell`, with Ansible's arguments (`creates`, `removes`, `chdir`,
`stdin`, `stdin_add_newline`, `strip_empty_ends`, `expand_argument_vars`)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q, words
from pctfleet.sh import library, snippet


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
        said = f"skipped, since {path} {why}"
        result = {"rc": 0, "stdout": said, "stdout_lines": [said], **_not_run(args)}
        return Plan(False, msg=msg, result=result)
    return None


def _run(args: CommandArgs, words: list[str], program: bool, reads: list[str] = ()) -> Plan:
    """The change: `words` (sh code, one word each) run in `chdir`, fed `stdin` (a line
    break added unless `stdin_add_newline: false`, as ansible-core does); check mode
    leaves it to the runner. Around the program the script tells `_ran`, on stderr,
    what ansible-core registers besides the output: the times around the run, or why
    it did not start. It says so between two copies of a mark made in the container
    and printed on stderr's first line, before the program starts: the program never
    sees the mark (not in its parent's argv, not exported), so its output cannot forge
    what the script says. `program`: see first whether the first word is a program to
    start (command; shell's is /bin/sh)."""
    said = "printf '%s %s %s' \"$pf_mark\""  # then what it says, then the mark again
    lines = [
        f"pf_mark={MARK}$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n')",
        "printf '%s\\n' \"$pf_mark\" >&2",
        *reads,
        f"set -- {' '.join(words)}",
    ]
    if args.chdir:
        failed = f'{{ {said} chdir "$pf_mark" >&2; exit 1; }}'
        lines.append(f"cd {q(args.chdir)} 2>/dev/null || {failed}")
    if program:
        failed = f'{{ pf_errno=$?; {said} "exec $pf_errno" "$pf_mark" >&2; exit "$pf_errno"; }}'
        lines.append(f'pf_exec_errno "$1" || {failed}')
    lines += [
        "pf_started=$(pf_now)",
        '(exec "$@")',  # a program, never a shell builtin of the same name
        "pf_rc=$?",
        f'{said} "ran $pf_started|$(pf_now)" "$pf_mark" >&2',
        'exit "$pf_rc"',
    ]
    stdin = (args.stdin or "") + ("\n" if args.stdin and args.stdin_add_newline else "")
    # ansible-core in check mode: skipped, unless creates/removes say it would change.
    guarded = bool(args.creates or args.removes)
    script = library(("run_command",)) + "\n".join(lines) + "\n"
    return Plan(True, script=script, skip_in_check=not guarded, stdin=stdin.encode(), trailer=MARK)


MARK = "pctfleet-ran-"
_MARKED = re.compile(r"pctfleet-ran-[0-9a-f]{16}")


def _said(err: str) -> tuple[str, list[str]]:
    """stderr without what the script said around the program, and what it said ([]
    where it said nothing: the mark's line missing, or no word after it)."""
    mark, newline, rest = err.partition("\n")
    if not newline or not _MARKED.fullmatch(mark):
        return err, []
    at = rest.find(mark)
    if at < 0:
        return rest, []
    end = rest.find(mark, at + len(mark))
    end = len(rest) if end < 0 else end
    return rest[:at] + rest[end + len(mark) :], rest[at + len(mark) : end].split()


def _checked(args: CommandArgs, plan: Plan) -> dict:
    """What ansible-core registers for a command check mode did not run."""
    done = {"rc": 0, "msg": "Command would have run if not in check mode", **_not_run(args)}
    done |= {"stdout": "", "stdout_lines": []}
    return done | ({"skipped": True, "changed": False} if plan.skip_in_check else {})


# Python's os.path.expandvars, which ansible-core's command module applies to each word.
_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)
_SH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER = re.compile(r"~[A-Za-z0-9._-]*(?=/|$)")


def expanded_word(word: str, reads: list[str]) -> str:
    """sh code for `word` as ansible-core's command module passes it on: `$NAME` and
    `${NAME}` of a variable in the container's environment replaced (left as written
    when it is not; `pf_env` in sh/lib/run_command.sh), then a leading `~` or `~user`
    made that home. Everything else stays quoted. Each value is read into a variable
    first, by a line added to `reads`, so its final line breaks are kept."""
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
        value = f"pf_v{len(reads)}"
        reads.append(f"{value}=$(pf_env {name} {q(found.group())}; echo x); {value}=${{{value}%x}}")
        code += f'"${value}"'
        position = found.end()
    tail = rest[position:]
    return code + (q(tail) if tail or not code else "")


class Command(Module, name="command", args=CommandArgs, fact=GuardFact()):
    """Run a program without a shell: `command: ls -la /opt` or `argv: [ls, -la]`."""

    changed_when_failed = True

    def plan(self, args: CommandArgs, state: Guards | None, check: bool) -> Plan:
        reads: list[str] = []
        if args.expand_argument_vars:
            words = [expanded_word(word, reads) for word in _argv(args)]
        else:
            words = [q(word) for word in _argv(args)]
        return _skipped(args, state, check) or _run(args, words, True, reads)

    def finish(self, args: CommandArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        return _ran(self, args, plan, rc, out, err)

    def checked(self, args: CommandArgs, plan: Plan) -> dict:
        return _checked(args, plan)


class Shell(Module, name="shell", args=ShellArgs, fact=GuardFact()):
    """Run a line through /bin/sh: pipes, redirections and variables work."""

    changed_when_failed = True

    def plan(self, args: ShellArgs, state: Guards | None, check: bool) -> Plan:
        shell = args.executable or "/bin/sh"
        return _skipped(args, state, check) or _run(args, [q(shell), "-c", q(args.cmd)], False)

    def finish(self, args: CommandArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        return _ran(self, args, plan, rc, out, err)

    def checked(self, args: CommandArgs, plan: Plan) -> dict:
        return _checked(args, plan)


def _argv(args: CommandArgs) -> tuple[str, ...]:
    return args.argv or tuple(shlex.split(args.cmd))


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}")


def _ran(module: Module, args: CommandArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
    """What ansible-core registers for a command that ran, or could not start: the
    output without the script's trailer, `cmd`, and `start`/`end`/`delta` as the
    container's clock read them (absent where `date` could not say)."""
    err, said = _said(err) if plan.trailer else (err, [])
    result = Module.finish(module, args, plan, rc, out, err) | {"cmd": _cmd(args)}
    if rc != 0:  # ansible-core's words; the output's tail shows under the task
        result["msg"] = "non-zero return code"
    if not args.strip_empty_ends:  # the output's final line breaks are kept
        result |= {"stdout": out, "stderr": err}
    kind = said[0] if said else ""
    if kind == "exec":  # execvp's errno, in ansible-core's words; nothing ran
        written = args.cmd or shlex.join(args.argv)
        return result | _NOT_RUN | {"rc": rc, "cmd": written, "stderr": "", "stderr_lines": []}
    if kind == "chdir":
        return result | _NOT_STARTED | _NO_TIMES | {"rc": None, "stderr": "", "stderr_lines": []}
    return result | _times(said[1] if kind == "ran" and len(said) > 1 else "")


def _not_run(args: CommandArgs) -> dict:
    """What a command that did not run registers besides its status and output."""
    return {"cmd": _cmd(args), **_NO_TIMES, "stderr": "", "stderr_lines": []}


def _cmd(args: CommandArgs) -> str | list[str]:
    """`cmd` as ansible-core registers it: shell's line, command's words as written."""
    return args.cmd if args.module == "shell" else list(_argv(args))


_NOT_RUN = {"failed": True, "changed": False, "msg": "Error executing command.", "stdout": ""}
_NOT_STARTED = _NOT_RUN | {"msg": "Unable to change directory before execution."}
_NO_TIMES = dict.fromkeys(("start", "end", "delta"))


def _times(stamps: str) -> dict:
    """`start`, `end` and `delta` from "START|END" ({} where either is not a time)."""
    parts = stamps.split("|")
    if len(parts) != 2 or not all(_STAMP.fullmatch(stamp) for stamp in parts):
        return {}
    start, end = (datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f") for stamp in parts)
    return {"start": str(start), "end": str(end), "delta": str(end - start)}
