"""Human output (rich) and the JSON document of a run: the same data, two renderings."""

from __future__ import annotations

import json
import threading
from typing import Any

from rich.console import Console
from rich.table import Table

from pctfleet.run.failure import shown_tail
from pctfleet.run.results import UNREACHED, ContainerRun, TaskResult, summary
from pctfleet.textout import line

STYLE = {
    "ok": "green",
    "changed": "yellow",
    "failed": "bold red",
    "skipped": "cyan",
    **dict.fromkeys(UNREACHED, "bold magenta"),
    "interrupted": "bold red",
}


class LiveReport:
    """A line per task per container as it completes (stderr, so stdout stays clean)."""

    def __init__(self, console: Console, verbose: int = 0, show_diff: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self.show_diff = show_diff
        self.lock = threading.Lock()

    def task(self, run: ContainerRun, result: TaskResult) -> None:
        if result.status == "skipped" and not self.verbose:
            return
        prefix = "handler " if result.handler else ""
        text = line(
            (f"{result.status:8}", STYLE.get(result.status, "")),
            f" {run.key:14} {prefix}{result.name}",
        )
        shown = _said(result.module, result.status)
        if result.msg and (result.status == "failed" or self.verbose) and not shown:
            text.append_text(line("  ", (_one_line(result.msg), "dim")))
        with self.lock:
            self.console.print(text)
            if shown and result.msg and result.items is None:  # a loop's: its items'
                self._message(result.msg)
            for warning in result.details.get("warnings", []):
                self.console.print(line("  warning: ", warning))
            for item in self._items(result):
                self.console.print(item)
            for row in failure_lines(result.failure):
                self.console.print(row)
            if self.show_diff and result.diff:
                self._diff(result.diff)

    def _items(self, result: TaskResult) -> list:
        """A looped task's items, one line each (skipped ones only when verbose)."""
        shown = []
        for item in result.items or []:
            if item["status"] == "skipped" and not self.verbose:
                continue
            label = _one_line(str(item["item"]), 80)
            status = (f"{item['status']:8}", STYLE.get(item["status"], ""))
            text = line("  ", status, f" (item={label})")
            if _said(result.module, item["status"]):
                text.append_text(line("  ", item["msg"]))  # whole: it is what debug is for
            elif item["msg"] and (item["status"] == "failed" or self.verbose):
                text.append_text(line("  ", (_one_line(item["msg"]), "dim")))
            shown.append(text)
        return shown

    def _message(self, msg: str) -> None:
        """What a debug task says, whole, as ansible-core shows it at any verbosity."""
        for row in msg.splitlines() or [""]:
            self.console.print(line("    ", row))

    def _diff(self, diff: dict) -> None:
        for row in diff_lines(diff):
            self.console.print(row)


def diff_lines(diff: dict) -> list:
    """A task's diff as unified-diff lines, coloured."""
    import difflib

    if not diff:
        return []
    before = str(diff.get("before", "")).splitlines(keepends=True)
    after = str(diff.get("after", "")).splitlines(keepends=True)
    path = diff.get("path", "")
    rows = []
    for row in difflib.unified_diff(before, after, f"before: {path}", f"after: {path}"):
        colour = "green" if row.startswith("+") else "red" if row.startswith("-") else "dim"
        rows.append(line((row.rstrip(), colour)))
    return rows


def failure_lines(failure: dict[str, Any], tail: int = 10) -> list:
    """A failed task's why, under its line: rc, its output's last lines, a known cause and fix."""
    if not failure:
        return []
    stream, text = shown_tail(failure)
    said = f"{stream} (last lines):" if text else "no output"
    rows = [line("    ", (f"rc {failure.get('rc')}, {said}", "dim"))]
    rows += [line("    | ", row) for row in text.splitlines()[-tail:]]
    if failure.get("cause"):
        rows.append(line("    ", ("cause: ", "bold"), failure["cause"]["cause"]))
        rows.append(line("    ", ("fix: ", "bold"), failure["cause"]["fix"]))
    return rows


def _said(module: str, status: str) -> bool:
    """Whether the task's message is its output: a debug that ran (one skipped for its
    `verbosity` says nothing, as in ansible-core)."""
    return module == "debug" and status == "ok"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def recap(console: Console, runs: list[ContainerRun], run_id: str) -> None:
    """Ansible's PLAY RECAP, as a table, plus the reason for each container that stopped."""
    table = Table(title=line(f"RECAP  run {run_id}"), title_justify="left")
    counts = ("ok", "changed", "failed", "skipped", "rescued", "ignored")
    for column in ("container", "status", *counts, "calls", "secs"):
        table.add_column(
            column, justify="right" if column not in {"container", "status"} else "left"
        )
    for run in runs:
        stats = run.stats()
        table.add_row(
            line(run.key),
            line((run.status, STYLE.get(run.status, ""))),
            *(line(stats[k]) for k in counts),
            line(run.remote_calls),
            line(f"{run.duration:.1f}"),
        )
    console.print(table)
    for run in runs:
        if run.message:
            console.print(line((run.key, STYLE.get(run.status, "")), f": {run.message}"))


def document(runs: list[ContainerRun], run_id: str, extra: dict[str, Any] | None = None) -> str:
    data = {
        "run_id": run_id,
        "containers": [r.as_json() for r in runs],
        "summary": summary(runs),
        **(extra or {}),
    }
    return json.dumps(data, indent=2, default=str)


def warn(console: Console, warnings: list[str]) -> None:
    """What the playbook held that was not used (a vars file not found), one line each."""
    for warning in warnings:
        console.print(line(f"warning: {warning}"))


def make_console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    import sys

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 160
    return Console(stderr=stderr, soft_wrap=True, width=width)
