"""`pctfleet audit`: drift from the playbook and from a recorded baseline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from pctfleet.cli.groups import flag, grouped, opt, use
from pctfleet.cli.options import (
    DEFAULT_PLAYBOOK,
    Connection,
    Forks,
    Output,
    Run,
    Selection,
    Where,
    default_playbook,
)
from pctfleet.status import Status, exit_code


@dataclass
class Baseline:
    """The recorded fingerprints drift is also judged against."""

    baseline: bool = flag("--baseline", "Record each container's fingerprint as the new baseline.")
    baseline_file: Path = opt(
        "--baseline-file", "Where baselines live.", Path("~/.local/state/pctfleet/baseline.json")
    )


@grouped(
    sel=Selection,
    run=use(Run, "tags", "skip_tags", "extra_vars", "roles_path"),
    base=Baseline,
    out=use(Output, "as_json"),
    conn=Connection,
    where=Where,
)
def audit_command(
    *,
    sel: Selection,
    playbook: Annotated[Path, typer.Option("--playbook", "-p", help="Desired state.")] = (
        DEFAULT_PLAYBOOK
    ),
    run: Run,
    base: Baseline,
    forks: Forks = None,
    out: Output,
    conn: Connection,
    where: Where,
) -> int:
    """Find drift: the playbook in check mode plus a fingerprint, one pct exec per container.

    This machine instead (no SSH, no pct, one local probe): pctfleet audit --local

    Each container gets the tasks that would change (expected vs actual) and,
    once a baseline was recorded (--baseline), every version, link, overlay
    hash, pip package or CT config line (`pct config` on its node) that
    differs from it. A version matrix shows which
    containers differ from the rest. Exit 0 no drift, 2 drift, 1 error
    (an unreachable container is never reported clean).

    The nodes are also asked which containers they hold (pct list): one the
    inventory does not list is "unmanaged", one it lists that the node lacks is
    "missing" (both drift, exit 2); a node that cannot be read is an error.

    Examples:

      pctfleet audit -i /var/lib/pctfleet-lab/inventory.yml -l node1/200
      pctfleet audit -i /var/lib/pctfleet-lab/inventory.yml
      pctfleet audit -i /var/lib/pctfleet-lab/inventory.yml -l node2 --json
    """
    from pctfleet.cli.auditview import render, render_fleet, to_json
    from pctfleet.cli.report import make_console
    from pctfleet.cuda import audit as drift
    from pctfleet.cuda.gpu_rules import audit_gpu

    inv, containers = where.select(sel, conn, default_playbook(playbook).parent)
    runs, fleet, nodes = audit_runs(inv, containers, playbook, run, conn, where, forks, out.as_json)
    configs = drift.ct_configs(nodes)
    audits, recorded = drift.judge_fleet(runs, base.baseline_file, base.baseline, configs)
    audit_gpu(audits, runs, nodes, inv, containers)
    if recorded is not None:
        typer.secho(f"baseline: recorded {recorded} container(s) in {base.baseline_file}", err=True)
    if out.as_json:
        typer.echo(to_json(audits, fleet, nodes))
    else:
        render_fleet(make_console(), fleet)
        render(make_console(), audits)
    statuses = [a.status for a in audits] + [FLEET_STATUS[i.kind] for i in fleet]
    return exit_code("audit", statuses)


def audit_runs(inv, containers, playbook, run, conn, where, forks, quiet, more=None) -> tuple:  # noqa: ANN001, E501
    """The audit's one pass: what the nodes hold (their containers and CT configs,
    their NVIDIA driver), then the playbook in check mode with the fingerprint (and
    `more` probes) read in the same call per container."""
    from pctfleet.cli.progress import display_for
    from pctfleet.cli.report import make_console, warn
    from pctfleet.cuda import audit as drift
    from pctfleet.run.playbookrun import RunRequest, execute, prepare

    fleet, nodes = ([], []) if where.is_local else fleet_check(inv, containers, conn, forks)
    gone = {(i.node, i.ctid) for i in fleet if i.kind == "missing"}
    containers = [c for c in containers if (c.node.name, c.ctid) not in gone]
    probes = {"fingerprint": drift.fingerprint_snippet, "stale": drift.stale_snippet}
    probes.update(more or {})
    options = run.run_options(check=True, diff=True, extra_probes=probes)
    request = RunRequest(
        default_playbook(playbook), inv, containers, conn.options(), options, forks
    )
    prepared = prepare(request)
    console = make_console(stderr=True)
    warn(console, prepared.warnings)
    display = display_for(console, prepared.plays, as_json=quiet)
    options.observer = display.tracker
    with display:
        return (execute(prepared) if containers else []), fleet, nodes


FLEET_STATUS = {"unmanaged": Status.DRIFT, "missing": Status.DRIFT, "unreadable": Status.ERROR}


def fleet_check(inv, containers, conn: Connection, forks: int | None) -> tuple[list, list]:  # noqa: ANN001
    """What the selected containers' nodes hold against the inventory (one command a node),
    and what each node reported (its containers' configs, its NVIDIA driver)."""
    from pctfleet.inventory.discover import fleet_drift, read_nodes

    nodes = list({c.node.name: c.node for c in containers}.values())
    found = read_nodes(nodes, conn.options(), forks)
    return fleet_drift(inv.containers, containers, found, inv.rules), found
