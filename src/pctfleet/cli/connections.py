"""`pctfleet connections`: the node logins kept by `--persist`, and closing them."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from pctfleet import exitcodes
from pctfleet.cli.groups import grouped, use
from pctfleet.cli.options import Output

ENDED_WITHIN = 10.0  # seconds --close waits for a keeper to end

CloseFlag = Annotated[
    bool, typer.Option("--close", help="Close every kept login now and end the keeper.")
]


@grouped(out=use(Output, "as_json"))
def connections_command(*, close: CloseFlag = False, out: Output) -> int:
    """The node logins kept by `--persist SECONDS` (or PCTFLEET_PERSIST) for the next command.

    Every keeper of this user is asked (one per environment: venv, home, agent);
    keeper_pid in --json is this environment's, and closed counts the logins
    --close closed (those of keepers seen to end; 0 without --close).

    A kept login is this user's: a background keeper holds it and closes it
    SECONDS after its last use, or at --close. Exit 0 also when none is kept.

    Keep them with --persist on run, provision, audit, report, doctor, exec,
    verify or rollout, e.g. 'pctfleet audit -i fleet.yml --persist 300'.

    Examples:

      pctfleet connections
      pctfleet connections --json
      pctfleet connections --close
    """
    from pctfleet.transport import keep

    own = keep.keeper_socket()
    kept: list[dict] = []
    own_pid = None
    closed = 0  # logins whose keeper took --close and has ended since: closed for sure
    for path in keep.keeper_sockets():  # every keeper of this user: other venvs, agents
        answer = keep.ask(path, b"S" if close else b"L", {}, timeout=5)
        if answer is None:
            continue
        held = [{**item, "keeper_pid": answer.get("pid")} for item in answer.get("kept") or []]
        kept += held
        own_pid = answer.get("pid") if path == own else own_pid
        if close and _wait_ended(answer.get("pid")):
            closed += len(held)
        elif close:
            said = f"keeper {answer.get('pid')} took --close but has not ended"
            typer.secho(f"warning: {said}; its {len(held)} login(s) may still be open",
                        err=True, fg="yellow")  # fmt: skip
    if out.as_json:
        document = {"keeper_pid": own_pid, "kept": kept, "closed": closed}
        typer.echo(json.dumps(document, indent=2))
    else:
        _show(kept, closed if close else None)
    return exitcodes.OK


def _wait_ended(pid: object) -> bool:
    """Whether the keeper has ended (waited for): the next command then starts a new one."""
    import os
    import time

    if not isinstance(pid, int):
        return False  # no process named: its end cannot be seen
    deadline = time.monotonic() + ENDED_WITHIN
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return True  # not ours: a PID reused by another user's process
        time.sleep(0.02)
    return False


def _show(kept: list[dict], closed: int | None) -> None:
    from rich.table import Table

    from pctfleet.cli.report import make_console
    from pctfleet.textout import line

    console = make_console()
    if not kept:
        console.print("no kept logins")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("node", "login", "since", "idle s", "persist s", "running"):
        table.add_column(column)
    for item in kept:
        login = f"{item.get('user')}@{item.get('hostname')}:{item.get('port')}"
        table.add_row(
            line(str(item.get("node"))),
            line(login),
            str(item.get("since")),
            str(item.get("idle_s")),
            f"{item.get('persist_s'):g}",
            str(item.get("in_flight")),
        )
    console.print(table)
    if closed is not None:
        console.print(f"closed {closed} of {len(kept)} kept login(s)")
