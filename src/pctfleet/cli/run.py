"""`pctfleet run` and `provision`: a playbook on containers, with a live report and a journal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pctfleet import exitcodes
from pctfleet.cli.groups import grouped, use
from pctfleet.cli.options import (
    DEFAULT_PLAYBOOK,
    Connection,
    Forks,
    Lock,
    Output,
    Run,
    Selection,
    Where,
    default_playbook,
    fail,
)
from pctfleet.status import exit_code
from pctfleet.textout import line


@grouped(sel=Selection, run=Run, out=Output, lock=Lock, conn=Connection, where=Where)
def run_command(
    playbook: Annotated[Path, typer.Argument(help="Playbook YAML.", show_default=False)],
    *,
    sel: Selection,
    run: Run,
    forks: Forks = None,
    **rest: Any,  # out, lock, conn, where
) -> int:
    """Bring containers to the state a playbook declares.

    On this machine instead (no SSH, no pct, no inventory; Ansible's
    connection: local): pctfleet run site.yml --local -e venv=/opt/venv.
    The host is 'localhost' on node 'local' (ctid 0) and every play runs on it;
    -i, --host, --ct and --limit are refused with --local.

    Exit codes: 0 success, 2 a task failed, 3 a container was unreachable
    (node down, container missing or stopped, timeout), 4 bad inventory,
    playbook or vars, 5 bad options, 99 interrupted.

    Examples:

      pctfleet run playbooks/site.yml -i /var/lib/pctfleet-lab/inventory.yml -l node1/200 --check -D
      pctfleet run playbooks/site.yml -i /var/lib/pctfleet-lab/inventory.yml -l 'lab:!systemd'
      pctfleet run playbooks/site.yml -i /var/lib/pctfleet-lab/inventory.yml -l node2 --check --json
    """
    return playbook_run("run", default_playbook(playbook), sel, run, forks, **rest)


@grouped(
    sel=use(Selection, "host", "ct", "inventory", "limit", *Selection.VAULT_FIELDS),
    run=Run,
    out=Output,
    lock=Lock,
    conn=use(Connection, timeout=1800.0),
    where=Where,
)
def provision_command(
    sel: Selection,
    playbook: Annotated[Path, typer.Option("--playbook", "-p", help="Playbook to run.")] = (
        DEFAULT_PLAYBOOK
    ),
    *,
    run: Run,
    forks: Forks = None,
    **rest: Any,  # out, lock, conn, where
) -> int:
    """Provision one container with the full GPU serving setup (playbooks/site.yml).

    This machine instead: provision --local -e venv=/opt/venv --tags toolchain,overlay,links

    Same options and exit codes as 'pctfleet run'.

    Examples:

      provision --host 10.1.2.6 --ct 200
      provision -i /var/lib/pctfleet-lab/inventory.yml -l node1 --check --diff
      provision -i /var/lib/pctfleet-lab/inventory.yml -l node2/200 --check --json
    """
    return playbook_run("provision", default_playbook(playbook), sel, run, forks, **rest)


def playbook_run(
    command: str,
    playbook: Path,
    sel: Selection,
    run: Run,
    forks: int | None,
    *,
    out: Output,
    lock: Lock,
    conn: Connection,
    where: Where,
) -> int:
    """Shared by `run` and `provision`: load, preflight, run, report, exit code."""
    if not playbook.is_file():
        raise fail(f"playbook not found: {playbook}", exitcodes.BAD_OPTIONS)
    # Selecting starts the nodes' logins: they go on while the engine loads.
    inv, containers = where.select(sel, conn, playbook.parent)

    from pctfleet.cli import progress, report
    from pctfleet.cli.runs import keep_spec, meta, write_end
    from pctfleet.run.journal import Journal
    from pctfleet.run.playbookrun import RunRequest, execute_journaled, prepare

    options = run.run_options(
        lock_wait=lock.lock_wait, lock_lease=lock.lock_lease, verbosity=out.verbose
    )
    request = RunRequest(playbook, inv, containers, conn.options(), options, forks)
    prepared = prepare(request)
    journal = Journal(out.journal_dir, keep=keep_spec(out.keep))
    options.run_id = journal.run_id
    console = report.make_console(stderr=True)
    report.warn(console, prepared.warnings)
    live = report.LiveReport(console, out.verbose, show_diff=run.diff and not out.as_json)
    mode = " (check mode)" if run.check else ""
    count = len(prepared.containers)  # those a play matches: the recap's rows
    console.print(line(f"run {journal.run_id}: {playbook} on {count} container(s){mode}"))

    def interrupted() -> None:
        console.print(
            line(f"interrupted: no new tasks started; journal {journal.path}; rerun to finish")
        )

    display = progress.display_for(console, prepared.plays, out.verbose, out.as_json)
    options.observer = display.tracker
    with display:
        runs = execute_journaled(prepared, journal, live.task, interrupted, **meta(command))
    code = exit_code(command, (r.status for r in runs))
    write_end(out.journal_dir, journal.run_id, runs, code)
    if out.as_json:
        extra = {"journal": str(journal.path)}
        if prepared.warnings:
            extra["warnings"] = prepared.warnings
        typer.echo(report.document(runs, journal.run_id, extra))
    else:
        report.recap(console, runs, journal.run_id)
    for problem in progress.node_problems(runs):
        console.print(line(problem))
    return code
