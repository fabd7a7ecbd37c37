"""`pctfleet doctor`: why flashinfer's JIT would fail, container by container."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from pctfleet.cli.groups import flag, grouped, opt, use
from pctfleet.cli.options import Connection, Forks, Output, Selection, Where
from pctfleet.status import exit_code


@dataclass
class Diagnose:
    """What doctor looks at, and where (its own options)."""

    venv: str | None = opt("--venv", "Serving venv.", shown="the 'venv' var, else /opt/sglang")
    arch: str | None = opt("--arch", "Target arch, e.g. sm_120.", shown="the GPU's, else sm_120")
    cuda_toolkit: str | None = opt(
        "--cuda-toolkit", "Expected cuda-toolkit.", shown="what torch pins"
    )
    env_file: str | None = opt(
        "--env-file", "The server's environment file.", shown="the 'server_env_file' var"
    )
    no_probe: bool = flag("--no-probe", "Skip the compile probe.")

    def overrides(self) -> dict:
        return {
            "venv": self.venv,
            "arch": self.arch,
            "cuda_toolkit": self.cuda_toolkit,
            "env_file": self.env_file,
            "run_probe": not self.no_probe,
        }


@grouped(
    sel=use(Selection, "host", "ct", "inventory", "limit", *Selection.VAULT_FIELDS),
    what=Diagnose,
    out=use(Output, "as_json"),
    conn=Connection,
    where=Where,
)
def doctor_command(
    *,
    sel: Selection,
    what: Diagnose,
    forks: Forks = None,
    out: Output,
    conn: Connection,
    where: Where,
) -> int:
    """Why would flashinfer's JIT fail here? Checks every toolchain rule, compiles a probe.

    This machine instead (no SSH, no pct): pctfleet doctor --local --venv /opt/venv

    Reports every component's version (pip metadata and binaries), each rule
    with its evidence, the compile probe, known errors in the server's log, and
    the one-line fix. Changes nothing. Exit 0 healthy, 2 a problem found,
    3 unreachable.

    Examples:

      pctfleet doctor --host 10.1.2.6 --ct 200
      pctfleet doctor -i /var/lib/pctfleet-lab/inventory.yml -l node1
      pctfleet doctor -i /var/lib/pctfleet-lab/inventory.yml -l node2/200 --no-probe --json
    """
    from pctfleet.cli.doctorview import render, to_json
    from pctfleet.cli.report import make_console
    from pctfleet.cuda.doctor import run_doctor

    inv, containers = where.select(sel, conn)
    diagnoses = run_doctor(inv, containers, conn.options(), what.overrides(), forks)
    if out.as_json:
        typer.echo(to_json(diagnoses))
    else:
        render(make_console(), diagnoses)
    return exit_code("doctor", (d.status for d in diagnoses))
