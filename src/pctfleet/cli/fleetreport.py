"""`pctfleet report`: the fleet on one self-contained page (HTML or Markdown)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from pctfleet import exitcodes
from pctfleet.cli.audit import Baseline, audit_runs
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
    fail,
)
from pctfleet.status import exit_code


@dataclass
class Page:
    """Where the page goes and what it holds."""

    html: str | None = opt("--html", "Write the HTML page here ('-': stdout).")
    markdown: str | None = opt("--markdown", "Write the Markdown page here ('-': stdout).")
    last: int = opt("--last -n", "Runs listed, and journals read for the timeline.", 20, min=1)
    no_verify: bool = flag("--no-verify", "Skip verify's checks (one pct exec per container).")


@grouped(
    sel=Selection,
    page=Page,
    run=use(Run, "tags", "skip_tags", "extra_vars", "roles_path"),
    base=use(Baseline, "baseline_file"),
    out=use(Output, "journal_dir"),
    conn=Connection,
    where=Where,
)
def report_command(
    *,
    sel: Selection,
    page: Page,
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
    """The fleet on one self-contained page: versions, drift, health, runs, changes.

    One audit pass (the playbook in check mode and a fingerprint: one pct exec
    per container, plus one pct list per node), verify's checks (one more pct
    exec per container; --no-verify skips them) and the run journals. Doctor's
    verdict is judged from the audit's own reading (no compile probe). The page
    has no script and no external asset: it opens offline. Exit codes as
    audit's: 0 clean, 2 drift (or a failed check, or a doctor problem),
    1 a container could not be read; the page is written in every case.

    Examples:

      pctfleet report -i /var/lib/pctfleet-lab/inventory.yml -l node1/200 --html fleet.html
      pctfleet report -i /var/lib/pctfleet-lab/inventory.yml --no-verify --html fleet.html
      pctfleet report -i /var/lib/pctfleet-lab/inventory.yml -l node2 --markdown -
    """
    if not (page.html or page.markdown):
        raise fail("give --html PATH or --markdown PATH ('-': stdout)", exitcodes.BAD_OPTIONS)
    if page.html and page.markdown and _same_place(page.html, page.markdown):
        where = "stdout" if page.html == "-" else page.html
        raise fail(f"--html and --markdown both write to {where}: give each its own place",
                   exitcodes.BAD_OPTIONS)  # fmt: skip
    from pctfleet.cuda.audit import MATRIX, ct_configs, judge_fleet
    from pctfleet.cuda.gpu_rules import audit_gpu
    from pctfleet.inventory import parse_extra_vars
    from pctfleet.report import gather

    inv, containers = where.select(sel, conn, default_playbook(playbook).parent)
    more = {gather.PROBE: gather.log_snippet}
    runs, fleet, nodes = audit_runs(inv, containers, playbook, run, conn, where, forks, True, more)
    audits, _ = judge_fleet(runs, base.baseline_file, False, ct_configs(nodes))
    audit_gpu(audits, runs, nodes, inv, containers)
    inputs = gather.Inputs([a.as_json() for a in audits], [i.as_json() for i in fleet])
    read = [c for c in containers if c.key in {r.key for r in runs}]
    extra = parse_extra_vars(run.extra_vars or [])  # doctor and verify judge what -e says
    inputs.diagnoses = gather.diagnoses(runs, {c.key: inv.vars_for(c, extra) for c in read})
    inputs.nodes = 0 if where.is_local else len({c.node.name for c in containers})
    if not page.no_verify and read:
        inputs.verified = _verify(inv, read, conn, forks, extra)
    _journals(inputs, out.journal_dir, page.last)
    report = gather.build(inputs, MATRIX)
    _write(report, page)
    return exit_code("audit", report.statuses())


def _verify(inv, containers: list, conn: Connection, forks: int | None, extra: dict) -> list[dict]:  # noqa: ANN001, E501
    """Verify's result per container; checks that cannot run say so on stderr (no rows)."""
    from pctfleet.verify.runner import VerifyRequest, VerifyUsageError, run_verify

    request = VerifyRequest(inv, containers, conn.options(), forks=forks, extra_vars=extra)
    try:
        return [c.as_json() for c in run_verify(request).containers]
    except VerifyUsageError as exc:
        typer.secho(f"verify: {exc}", err=True, fg="red")
        return []


def _same_place(one: str, other: str) -> bool:
    """Whether two page destinations are one: both stdout, or one file (the second
    page would replace the first)."""
    if "-" in (one, other):
        return one == other
    return Path(one).resolve() == Path(other).resolve()


def _journals(inputs, journal_dir: Path | None, last: int) -> None:  # noqa: ANN001
    from pctfleet.run import history

    infos, problems = history.recent(journal_dir, last)
    for problem in problems:
        typer.secho(problem, err=True, fg="yellow")
    inputs.runs = [info.as_json() for info in infos]
    inputs.journals = history.journals(journal_dir)[:last]


def _write(report, page: Page) -> None:  # noqa: ANN001
    from pctfleet.report import html, markdown
    from pctfleet.report.gather import write_page

    for where, renderer in ((page.html, html), (page.markdown, markdown)):
        if not where:
            continue
        try:
            write_page(where, renderer.render(report))
        except OSError as exc:
            raise fail(f"cannot write {where}: {exc.strerror or exc}", exitcodes.ERROR) from None
