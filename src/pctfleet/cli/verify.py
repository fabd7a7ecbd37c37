"""`pctfleet verify`: testinfra checks of each container's end state, over pct."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from pctfleet.cli.groups import grouped, opt, use
from pctfleet.cli.options import Connection, Forks, Output, Run, Selection, Where, fail
from pctfleet.status import exit_code


@dataclass
class Checks:
    """Which checks run, and where their report goes."""

    tests: list[Path] | None = opt(
        "--tests", "More test files or folders (testinfra, the 'host' fixture); repeat."
    )
    keyword: str | None = opt("--keyword -k", "Select checks like pytest -k, e.g. 'server'.")
    junit: Path | None = opt("--junit", "Also write pytest's JUnit XML to this file.")


@grouped(
    sel=Selection,
    checks=Checks,
    run=use(Run, "extra_vars"),
    out=use(Output, "as_json"),
    conn=use(Connection, timeout=120.0),
    where=Where,
)
def verify_command(
    *,
    sel: Selection,
    checks: Checks,
    run: Run,
    forks: Forks = None,
    out: Output,
    conn: Connection,
    where: Where,
) -> int:
    """Prove each container's end state with testinfra checks over pct (changes nothing).

    This machine instead, through testinfra's local backend (no SSH, no pct):
    pctfleet verify --local -e venv=/opt/venv -k 'toolchain or links'

    Checks the matched toolchain, the links, the CCCL overlay, the JIT cache
    and the server (PID, port, /health), with each container's inventory vars
    (venv, server_port, ...; -e overrides them).
    Exit 0 when every check passed in every container, 1 otherwise (a failed
    check, or a container unreachable, missing or stopped), 4 unloadable
    tests, 5 bad options.

    Examples:

      pctfleet verify -i /var/lib/pctfleet-lab/inventory.yml -l node1/200 -k toolchain
      pctfleet verify -i /var/lib/pctfleet-lab/inventory.yml -l lab -k 'links or overlay'
      pctfleet verify -i /var/lib/pctfleet-lab/inventory.yml -l node2 --json --junit verify.xml
    """
    from rich.console import Console

    from pctfleet.cli.progress import display_for
    from pctfleet.cli.report import make_console
    from pctfleet.inventory import parse_extra_vars
    from pctfleet.verify.runner import VerifyRequest, VerifyUsageError, render, run_verify, to_json

    inv, containers = where.select(sel)
    request = VerifyRequest(
        inv,
        containers,
        conn.options(),
        tests=list(checks.tests or []),
        keyword=checks.keyword,
        junit=checks.junit,
        forks=forks,
        extra_vars=parse_extra_vars(run.extra_vars),
    )
    display = display_for(make_console(stderr=True), [(None, containers)], as_json=out.as_json)
    try:
        with display:
            result = run_verify(request, display.tracker)
    except VerifyUsageError as exc:
        raise fail(str(exc), exc.code) from None
    if out.as_json:
        typer.echo(to_json(result))
    else:
        render(Console(soft_wrap=True), result)
    return exit_code("verify", (c.status for c in result.containers))
