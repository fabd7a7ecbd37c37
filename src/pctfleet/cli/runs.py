"""`pctfleet runs`: recent runs and rollouts from their journals, one in detail, or one live."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from pctfleet import exitcodes
from pctfleet.cli.groups import grouped, use
from pctfleet.cli.options import Output, fail
from pctfleet.errors import InputError
from pctfleet.run import history
from pctfleet.run.journal import append, parse_keep, prune, read_checked
from pctfleet.textout import line

FOLLOW_POLL = 0.25  # seconds between looks at a growing journal

runs_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

Last = Annotated[int, typer.Option("--last", "-n", min=1, help="How many runs to list.")]
Keep = Annotated[
    str | None,
    typer.Option("--keep", help="Remove older journals now: keep a count (200) or days (30d)."),
]


# -- what `run` and `provision` write ----------------------------------------


def keep_spec(text: str) -> str:
    """A valid `--keep`, or a one-line error naming the value."""
    try:
        parse_keep(text)
    except ValueError:
        raise InputError(f"--keep {text!r}: give a count (200) or days (30d)") from None
    return text


def meta(command: str) -> dict[str, Any]:
    """What a run's start record says about who started it."""
    return {"command": command, "pid": os.getpid()}


def write_end(journal_dir: Path | None, run_id: str, runs: list, code: int) -> None:
    """The run's last record: its summary and exit code (`runs` reads them)."""
    from pctfleet.run.results import summary

    append(journal_dir, run_id, "end", summary=summary(runs), exit_code=code)


# -- pctfleet runs ------------------------------------------------------------


@runs_app.callback()
@grouped(out=use(Output, "as_json", "journal_dir"))
def runs_command(ctx: typer.Context, *, last: Last = 20, keep: Keep = None, out: Output) -> int:
    """Recent runs and rollouts, newest first, one line each, from the journals.

    Unreadable journal lines are named (file:line) on stderr and skipped.
    Without --journal-dir: ~/.local/state/pctfleet/runs and .../rollouts.
    --keep 30d removes journals older than 30 days now.

    Examples:

      pctfleet runs --last 5
      pctfleet runs --json --last 50
      pctfleet runs --keep 30d
    """
    if ctx.invoked_subcommand:
        if ctx.get_parameter_source("last").name != "DEFAULT":  # given, even as 20
            raise fail(f"--last lists runs: `runs {ctx.invoked_subcommand}` takes none",
                       exitcodes.BAD_OPTIONS)  # fmt: skip
        ctx.obj = out  # given before the subcommand: its --journal-dir and --json hold there
    if keep:
        for folder in history.folders(out.journal_dir):
            if folder.is_dir():
                prune(folder, keep_spec(keep))
    if ctx.invoked_subcommand:
        return exitcodes.OK
    infos, problems = history.recent(out.journal_dir, last)
    _problems(problems)
    if out.as_json:
        typer.echo(json.dumps({"runs": [i.as_json() for i in infos]}, indent=2))
    else:
        _table(infos)
    return exitcodes.OK


def _table(infos: list[history.RunInfo]) -> None:
    from pctfleet.cli.report import make_console

    table = Table(box=None, pad_edge=False)
    for column in ("id", "when", "command", "playbook", "cts", *history.COUNTS, "secs", "exit"):
        table.add_column(
            column, justify="left" if column in {"id", "command", "playbook", "when"} else "right"
        )
    for info in infos:
        counts = info.counts()
        table.add_row(
            info.id,
            _when(info.started),
            info.command or "?",
            info.playbook or "?",
            _opt(info.containers),
            *(str(counts[k]) for k in history.COUNTS),
            f"{info.duration:.1f}" if info.duration is not None else "-",
            _opt(info.exit_code, info.state),
        )
    make_console().print(table)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "?"


def _opt(value: Any, missing: str = "?") -> str:
    return missing if value is None else str(value)


def _problems(problems: list[str]) -> None:
    for problem in problems:
        typer.secho(f"warning: {problem}", err=True, fg="yellow")


# -- pctfleet runs show ID ----------------------------------------------------


Container = Annotated[
    str | None, typer.Option("--container", "-c", help="Only this container (node/ctid).")
]
Failed = Annotated[bool, typer.Option("--failed", help="Only failed tasks and containers not ok.")]
Follow = Annotated[
    bool, typer.Option("--follow", "-f", help="Follow a run in progress until it ends.")
]


def _with_outer(ctx: typer.Context, out: Output) -> Output:
    """`out` with what `runs` itself was given (`runs --journal-dir X --json show ID`);
    a folder given on both sides must be the same one."""
    outer = ctx.obj if isinstance(ctx.obj, Output) else Output()
    mine, theirs = out.journal_dir, outer.journal_dir
    if mine and theirs and Path(mine).resolve() != Path(theirs).resolve():
        raise fail(f"--journal-dir given twice: {theirs} and {mine}", exitcodes.BAD_OPTIONS)
    return Output(as_json=out.as_json or outer.as_json, journal_dir=mine or theirs)


@runs_app.command("show")
@grouped(out=use(Output, "as_json", "journal_dir"))
def show_command(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="A run or rollout id (or its unique start).")],
    *,
    container: Container = None,
    failed: Failed = False,
    follow: Follow = False,
    out: Output,
) -> int:
    """What happened in one run: per container, each task with its message and diff.

    Secrets stay hidden: the journal keeps only redacted text. --follow, from
    another terminal, prints a run in progress until it ends.

    Examples:

      pctfleet runs show 20261202T001905-9528eb --failed
      pctfleet runs show 20261202T0019 --container node1/200 --json
      pctfleet runs show 20261202T001905-9528eb --follow
    """
    out = _with_outer(ctx, out)
    path = history.find(out.journal_dir, run_id)
    if path is None:
        raise fail(f"no journal for run {run_id!r} (or more than one match)", exitcodes.BAD_OPTIONS)
    if follow:
        return _follow(path, container, failed, out.as_json)
    records, problems = read_checked(path)
    _problems(problems)
    info = history.summarise(path, records)
    containers = history.details(records, container, failed)
    if out.as_json:
        typer.echo(json.dumps({**info.as_json(), "containers": containers}, indent=2, default=str))
    else:
        _render(info, containers)
    return exitcodes.OK


def _render(info: history.RunInfo, containers: dict[str, dict]) -> None:
    from pctfleet.cli.report import make_console

    console = make_console()
    counts = " ".join(f"{k} {v}" for k, v in info.counts().items())
    what = f"{info.command or '?'} {info.playbook or '?'}"
    head = f"{info.kind} {info.id}: {what} at {_when(info.started)}"
    console.print(line(head, f", {info.state}, exit {_opt(info.exit_code, '-')}; {counts}"))
    for key, entry in containers.items():
        console.print(
            line((key, "bold"), f"  {entry['status'] or '?'}  ", (entry["message"], "dim"))
        )
        for task in entry["tasks"]:
            for row in _task_lines(task):
                console.print(row)


def _task_lines(task: dict) -> list:
    from pctfleet.cli.report import STYLE, diff_lines, failure_lines

    status = task.get("status", "?")
    text = line("  ", (f"{status:8}", STYLE.get(status, "")), f" {task.get('name', '?')}")
    if task.get("msg"):
        text.append_text(line("  ", (" ".join(str(task["msg"]).split()), "dim")))
    failure = {k: task[k] for k in ("rc", "stdout", "stderr", "cause") if k in task}
    return [text, *failure_lines(failure), *diff_lines(task.get("diff") or {})]


def _follow(path: Path, container: str | None, failed: bool, as_json: bool) -> int:
    """Print each new record as the run writes it, until its end record."""
    seen, start = 0, time.monotonic()
    while True:
        records, _ = read_checked(path)
        for record in records[seen:]:
            _followed(record, container, failed, as_json)
        seen = len(records)
        if records and records[-1].get("kind") in history.ENDS:
            return exitcodes.OK
        state = history.summarise(path, records).state if records else ""
        if state == "incomplete":
            typer.secho(f"{path}: the run stopped without an end record", err=True, fg="yellow")
            return exitcodes.ERROR
        if state == "no-end":  # nothing to wait for: it may never end
            typer.secho(
                f"{path}: no end record, and the journal names no process to wait for",
                err=True,
                fg="yellow",
            )
            return exitcodes.ERROR
        time.sleep(FOLLOW_POLL if time.monotonic() - start < 3600 else 1.0)


def _followed(record: dict, container: str | None, failed: bool, as_json: bool) -> None:
    if container and record.get("container") not in (None, container):
        return
    if failed and record.get("kind") == "task" and record.get("status") != "failed":
        return
    if as_json:
        typer.echo(json.dumps(record, default=str))
        return
    from pctfleet.cli.report import make_console

    console = make_console()
    if record.get("kind") == "task":
        console.print(line((record.get("container", ""), "bold")))
        for row in _task_lines(record):
            console.print(row)
    else:
        rest = {k: v for k, v in record.items() if k not in ("t", "run", "kind")}
        console.print(line((record.get("kind", "?"), "bold"), " ", json.dumps(rest, default=str)))
