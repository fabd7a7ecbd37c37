"""`pctfleet exec`: one command in many containers."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from typing import Annotated, BinaryIO

import typer

from pctfleet.cli.groups import grouped, use
from pctfleet.cli.options import Connection, Forks, Output, Selection
from pctfleet.run import adhoc
from pctfleet.status import exit_code
from pctfleet.textout import visible
from pctfleet.transport.base import Stdin
from pctfleet.transport.connections import build_fleet, start_logins

SMALL_STDIN = 1024 * 1024  # read into memory before the call, rather than streamed


@grouped(sel=Selection, conn=Connection, out=use(Output, "as_json"))
def exec_command(
    command: Annotated[
        list[str],
        typer.Argument(help="The command and its arguments, after '--'.", show_default=False),
    ],
    sel: Selection,
    conn: Connection,
    forks: Forks = None,
    no_stdin: Annotated[
        bool, typer.Option("--no-stdin", "-n", help="Do not forward stdin.")
    ] = False,
    *,
    out: Output,
) -> int:
    """Run a command in containers, in parallel; arguments arrive exactly as given.

    One container: exits with the command's own exit code. Several: 0 if all
    succeeded, 3 if a node was unreachable, 2 otherwise. Each container's
    output lines are prefixed with node/ctid.

    Examples:

      pctfleet exec --host 10.1.2.6 --ct 200,201 -- nvidia-smi -L
      pctfleet exec -i /var/lib/pctfleet-lab/inventory.yml -l lab -- uname -r
      pctfleet exec -i /var/lib/pctfleet-lab/inventory.yml -l node1 --json -- python3 --version
    """
    _, containers = sel.select()
    start_logins(containers, conn.options())  # while stdin is read and the fleet is built
    fleet = build_fleet(containers, conn.options())
    stdin = command_stdin(no_stdin, len(fleet.targets))
    plan = _output_plan(out.as_json, len(fleet.targets))
    try:
        outcomes = adhoc.run_exec(fleet.targets, command, stdin, plan, forks)
    finally:
        fleet.close()
    if out.as_json:
        typer.echo(json.dumps(_document(outcomes, fleet), indent=2))
    else:
        for outcome in outcomes:
            if outcome.message:
                shown = visible(f"{outcome.container}: {outcome.status}: {outcome.message}")
                typer.secho(shown, err=True, fg="red")
    own = outcomes[0].exit_code if len(outcomes) == 1 else None
    return exit_code("exec", (x.status for x in outcomes), own=own)


def command_stdin(no_stdin: bool, targets: int) -> Stdin:
    """What the command reads: nothing from a terminal; the same bytes for several
    containers; for one, a pipe streams in, and a small file (or /dev/null) is read
    first, so a call pct loses before the command starts can be sent again
    (transport/pct.py: only bytes are)."""
    if no_stdin or sys.stdin is None or sys.stdin.isatty():
        return None
    stream = sys.stdin.buffer
    if targets > 1:
        return stream.read()
    if not _small_file(stream):
        return stream
    head = stream.read(SMALL_STDIN + 1)  # a file may have grown since fstat
    return head if len(head) <= SMALL_STDIN else _Rest(head, stream)


class _Rest(io.RawIOBase):
    """What was read already, then the rest of the stream."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self._head, self._stream = head, stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if not self._head:
            return self._stream.read(size)
        if size is None or size < 0:  # all of it
            head, self._head = self._head, b""
            return head + self._stream.read()
        piece, self._head = self._head[:size], self._head[size:]
        return piece


def _small_file(stream: BinaryIO) -> bool:
    """A regular file of at most SMALL_STDIN bytes, or /dev/null."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return False
    if stat.S_ISREG(info.st_mode):
        return info.st_size <= SMALL_STDIN
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == os.stat(os.devnull).st_rdev


def _document(outcomes: list[adhoc.ExecOutcome], fleet) -> dict:  # noqa: ANN001
    statuses = {x.status for x in outcomes}
    return {
        "results": [x.as_json() for x in outcomes],
        "summary": {s: sum(1 for x in outcomes if x.status == s) for s in statuses},
        "connections": fleet.pool.connections_opened(),
        "connections_reused": fleet.pool.connections_reused(),
    }


def _output_plan(as_json: bool, count: int) -> adhoc.OutputPlan:
    if as_json:
        return adhoc.OutputPlan("collect")
    mode = "raw" if count == 1 else "prefix"
    return adhoc.OutputPlan(mode, sys.stdout.buffer, sys.stderr.buffer)
