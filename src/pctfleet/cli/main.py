"""The `pctfleet` command line: parse, call the library, render. Nothing else."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pctfleet import exitcodes
from pctfleet.cli import options as o
from pctfleet.cli.options import split_tags
from pctfleet.errors import InputError
from pctfleet.run import adhoc
from pctfleet.run.signals import sigterm_as_interrupt
from pctfleet.textout import line, visible
from pctfleet.transport.base import UNREACHED
from pctfleet.transport.connections import build_fleet

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    name="pctfleet",
    help="Bring GPU containers on Proxmox VE to a declared state: a matched CUDA toolchain, "
    "the CCCL overlay, link fixes, a clean flashinfer JIT cache and a healthy SGLang server.\n\n"
    "Nodes are reached over SSH (host keys checked), containers through 'pct exec'. "
    "Try it without Proxmox: 'pctfleet lab up'.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
)


def fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"error: {visible(message)}", err=True, fg="red")
    return typer.Exit(code)


def select_containers(inventory: Path | None, host: str | None, ct: str | None, limit: str | None):
    """The inventory and the containers a command works on: -i INVENTORY or --host/--ct."""
    from pctfleet.inventory import adhoc_inventory, load_inventory, parse_ctids

    if inventory and host:
        raise fail("give either -i INVENTORY or --host/--ct, not both", exitcodes.BAD_OPTIONS)
    if host:
        if not ct:
            raise fail("--host needs --ct (for example --ct 200,201)", exitcodes.BAD_OPTIONS)
        inv = adhoc_inventory(host, parse_ctids(ct))
    elif inventory:
        inv = load_inventory(inventory)
    else:
        raise fail("say where: -i INVENTORY, or --host NODE --ct 200", exitcodes.BAD_OPTIONS)
    return inv, inv.select(limit)


@app.command("exec", context_settings={"allow_interspersed_args": False})
def exec_command(
    command: Annotated[
        list[str],
        typer.Argument(help="The command and its arguments, after '--'.", show_default=False),
    ],
    inventory: o.Inventory = None,
    host: o.Host = None,
    ct: o.Ct = None,
    limit: o.Limit = None,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 600.0,
    connect_timeout: o.ConnectTimeout = 10.0,
    forks: Annotated[int, typer.Option("--forks", "-f", min=1, help="Containers at once.")] = 10,
    no_stdin: Annotated[
        bool, typer.Option("--no-stdin", "-n", help="Do not forward stdin.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> int:
    """Run a command in containers, in parallel; arguments arrive exactly as given.

    Example: pctfleet exec --host 10.1.2.6 --ct 200,201 -- nvidia-smi -L

    One container: exits with the command's own exit code. Several: 0 if all
    succeeded, 3 if a node was unreachable, 2 otherwise. Each container's
    output lines are prefixed with node/ctid.
    """
    _, containers = select_containers(inventory, host, ct, limit)
    cli = o.connect_options(
        user, port, identity, known_hosts, accept_new_host_keys, timeout, connect_timeout
    )
    fleet = build_fleet(containers, cli)
    stdin = None if no_stdin or sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer
    if stdin is not None and len(fleet.targets) > 1:
        stdin = stdin.read()  # every container gets the same bytes
    plan = _output_plan(as_json, len(fleet.targets))
    try:
        outcomes = adhoc.run_exec(fleet.targets, command, stdin, plan, forks)
    finally:
        fleet.close()
    if as_json:
        summary = {
            s: sum(1 for x in outcomes if x.status == s) for s in {x.status for x in outcomes}
        }
        document = {
            "results": [x.as_json() for x in outcomes],
            "summary": summary,
            "connections": fleet.pool.connections_opened(),
        }
        typer.echo(json.dumps(document, indent=2))
    else:
        for outcome in outcomes:
            if outcome.message:
                shown = visible(f"{outcome.container}: {outcome.status}: {outcome.message}")
                typer.secho(shown, err=True, fg="red")
    return adhoc.exit_code(outcomes)


def _output_plan(as_json: bool, count: int) -> adhoc.OutputPlan:
    if as_json:
        return adhoc.OutputPlan("collect")
    mode = "raw" if count == 1 else "prefix"
    return adhoc.OutputPlan(mode, sys.stdout.buffer, sys.stderr.buffer)


DEFAULT_PLAYBOOK = Path("playbooks/site.yml")


def _playbook_run(
    playbook: Path,
    *,
    inventory,
    host,
    ct,
    limit,
    conn,
    tags,
    skip_tags,
    check,
    diff,
    extra,
    forks,
    as_json,
    verbose,
    journal_dir,
    lock=(300.0, 60.0),
) -> int:
    """Shared by `run` and `provision`: load, preflight, run, report, exit code."""
    from pctfleet.cli import report
    from pctfleet.inventory import parse_extra_vars
    from pctfleet.run.engine import RunOptions
    from pctfleet.run.journal import Journal
    from pctfleet.run.playbookrun import RunRequest, execute, prepare

    if not playbook.is_file():
        raise fail(f"playbook not found: {playbook}", exitcodes.BAD_OPTIONS)
    inv, containers = select_containers(inventory, host, ct, limit)
    options = RunOptions(
        check=check,
        diff=diff,
        tags=split_tags(tags),
        skip_tags=split_tags(skip_tags),
        extra_vars=parse_extra_vars(extra),
        lock_wait=lock[0],
        lock_lease=lock[1],
    )
    request = RunRequest(playbook, inv, containers, conn, options, forks)
    prepared = prepare(request)
    journal = Journal(journal_dir)
    options.run_id = journal.run_id
    console = report.make_console(stderr=True)
    live = report.LiveReport(console, verbose, show_diff=diff and not as_json)
    console.print(
        line(
            f"run {journal.run_id}: {playbook} on {len(containers)} container(s)"
            f"{' (check mode)' if check else ''}"
        )
    )
    journal.write(
        "start", playbook=str(playbook), containers=[c.key for c in containers], check=check
    )
    try:
        with sigterm_as_interrupt():
            runs = execute(prepared, journal, live.task)
    except KeyboardInterrupt:
        request.stop.set()
        journal.write("interrupted")
        console.print(
            line(f"interrupted: no new tasks started; journal {journal.path}; rerun to finish")
        )
        raise
    finally:
        journal.close()
    if as_json:
        typer.echo(report.document(runs, journal.run_id, {"journal": str(journal.path)}))
    else:
        report.recap(console, runs, journal.run_id)
    return _run_exit_code(runs)


def _run_exit_code(runs) -> int:
    statuses = {r.status for r in runs}
    if statuses.intersection(UNREACHED):
        return exitcodes.UNREACHABLE
    if "interrupted" in statuses:
        return exitcodes.INTERRUPTED
    if "failed" in statuses:
        return exitcodes.FAILED
    return exitcodes.OK


Check = Annotated[
    bool, typer.Option("--check", "-C", help="Change nothing; report what would change.")
]
Diff = Annotated[
    bool, typer.Option("--diff", "-D", help="Show before/after of files and package versions.")
]
Tags = Annotated[
    str | None, typer.Option("--tags", "-t", help="Only tasks with these tags (comma-separated).")
]
SkipTags = Annotated[str | None, typer.Option("--skip-tags", help="Skip tasks with these tags.")]
Extra = Annotated[
    list[str] | None,
    typer.Option(
        "--extra-vars", "-e", help="k=v, @file.yml or a JSON mapping; highest precedence."
    ),
]
LockWait = Annotated[
    float,
    typer.Option(
        "--lock-wait",
        min=0,
        help="Seconds to wait for another run's lock on a container before giving up on it.",
    ),
]
LockLease = Annotated[
    float,
    typer.Option(
        "--lock-lease",
        min=1,
        hidden=True,
        help="Seconds a run keeps a container's lock between two of its calls.",
    ),
]
Forks = Annotated[int, typer.Option("--forks", "-f", min=1, help="Containers worked on at once.")]
Json = Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")]
Verbose = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More detail; repeat.")]
JournalDir = Annotated[
    Path | None,
    typer.Option(
        "--journal-dir",
        help="Where run journals go.",
        show_default="~/.local/state/pctfleet/runs",
    ),
]


@app.command("run")
def run_command(
    playbook: Annotated[Path, typer.Argument(help="Playbook YAML.", show_default=False)],
    inventory: o.Inventory = None,
    host: o.Host = None,
    ct: o.Ct = None,
    limit: o.Limit = None,
    tags: Tags = None,
    skip_tags: SkipTags = None,
    check: Check = False,
    diff: Diff = False,
    extra_vars: Extra = None,
    forks: Forks = 10,
    as_json: Json = False,
    verbose: Verbose = 0,
    journal_dir: JournalDir = None,
    lock_wait: LockWait = 300.0,
    lock_lease: LockLease = 60.0,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 600.0,
    connect_timeout: o.ConnectTimeout = 10.0,
) -> int:
    """Bring containers to the state a playbook declares.

    Example: pctfleet run playbooks/site.yml -i inventory/prod.yml --check --diff

    Exit codes: 0 success, 2 a task failed, 3 a container was unreachable
    (node down, container missing or stopped, timeout), 4 bad inventory,
    playbook or vars, 5 bad options, 99 interrupted.
    """
    return _playbook_run(playbook, **_run_options(locals()))


@app.command("provision")
def provision_command(
    host: o.Host = None,
    ct: o.Ct = None,
    inventory: o.Inventory = None,
    limit: o.Limit = None,
    playbook: Annotated[Path, typer.Option("--playbook", "-p", help="Playbook to run.")] = (
        DEFAULT_PLAYBOOK
    ),
    tags: Tags = None,
    skip_tags: SkipTags = None,
    check: Check = False,
    diff: Diff = False,
    extra_vars: Extra = None,
    forks: Forks = 10,
    as_json: Json = False,
    verbose: Verbose = 0,
    journal_dir: JournalDir = None,
    lock_wait: LockWait = 300.0,
    lock_lease: LockLease = 60.0,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 1800.0,
    connect_timeout: o.ConnectTimeout = 10.0,
) -> int:
    """Provision one container with the full GPU serving setup (playbooks/site.yml).

    Example: provision --host 10.1.2.6 --ct 200

    Same options and exit codes as 'pctfleet run'.
    """
    return _playbook_run(_default_playbook(playbook), **_run_options(locals()))


def _run_options(given: dict) -> dict:
    """What `run` and `provision` pass on: the same options, decided the same way."""
    return {
        "inventory": given["inventory"],
        "host": given["host"],
        "ct": given["ct"],
        "limit": given["limit"],
        "conn": o.connect_options(
            given["user"],
            given["port"],
            given["identity"],
            given["known_hosts"],
            given["accept_new_host_keys"],
            given["timeout"],
            given["connect_timeout"],
        ),
        "tags": given["tags"],
        "skip_tags": given["skip_tags"],
        "check": given["check"],
        "diff": given["diff"],
        "extra": given["extra_vars"] or [],
        "forks": given["forks"],
        "as_json": given["as_json"],
        "verbose": given["verbose"],
        "journal_dir": given["journal_dir"],
        "lock": (given["lock_wait"], given["lock_lease"]),
    }


def _default_playbook(playbook: Path) -> Path:
    """The default playbook is found in the working folder, else the one shipped with us."""
    if playbook != DEFAULT_PLAYBOOK or playbook.exists():
        return playbook
    shipped = Path(__file__).resolve().parent / "data" / "playbooks" / "site.yml"
    return shipped if shipped.exists() else playbook


@app.command("doctor")
def doctor_command(
    host: o.Host = None,
    ct: o.Ct = None,
    inventory: o.Inventory = None,
    limit: o.Limit = None,
    local: Annotated[
        bool, typer.Option("--local", help="Diagnose this machine instead (no SSH, no pct).")
    ] = False,
    venv: Annotated[
        str | None,
        typer.Option(
            "--venv", help="Serving venv.", show_default="the 'venv' var, else /opt/sglang"
        ),
    ] = None,
    arch: Annotated[
        str | None,
        typer.Option(
            "--arch", help="Target arch, e.g. sm_120.", show_default="the GPU's, else sm_120"
        ),
    ] = None,
    cuda_toolkit: Annotated[
        str | None,
        typer.Option(
            "--cuda-toolkit", help="Expected cuda-toolkit.", show_default="what torch pins"
        ),
    ] = None,
    env_file: Annotated[
        str | None,
        typer.Option(
            "--env-file",
            help="The server's environment file.",
            show_default="the 'server_env_file' var",
        ),
    ] = None,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Skip the compile probe.")] = False,
    forks: Forks = 10,
    as_json: Json = False,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 600.0,
    connect_timeout: o.ConnectTimeout = 10.0,
) -> int:
    """Why would flashinfer's JIT fail here? Checks every toolchain rule, compiles a probe.

    Example: pctfleet doctor --host 10.1.2.6 --ct 200

    Reports every component's version (pip metadata and binaries), each rule
    with its evidence, the compile probe, known errors in the server's log, and
    the one-line fix. Changes nothing. Exit 0 healthy, 2 a problem found,
    3 unreachable.
    """
    from pctfleet.cli.doctorview import exit_code, render, to_json
    from pctfleet.cli.report import make_console
    from pctfleet.cuda.doctor import run_doctor

    conn = o.connect_options(
        user, port, identity, known_hosts, accept_new_host_keys, timeout, connect_timeout
    )
    overrides = {
        "venv": venv,
        "arch": arch,
        "cuda_toolkit": cuda_toolkit,
        "env_file": env_file,
        "run_probe": not no_probe,
    }
    if local:
        diagnoses = run_doctor(None, [], conn, overrides, forks)
    else:
        inv, containers = select_containers(inventory, host, ct, limit)
        diagnoses = run_doctor(inv, containers, conn, overrides, forks)
    if as_json:
        typer.echo(to_json(diagnoses))
    else:
        render(make_console(), diagnoses)
    return exit_code(diagnoses)


@app.command("audit")
def audit_command(
    inventory: o.Inventory = None,
    host: o.Host = None,
    ct: o.Ct = None,
    limit: o.Limit = None,
    playbook: Annotated[Path, typer.Option("--playbook", "-p", help="Desired state.")] = (
        DEFAULT_PLAYBOOK
    ),
    tags: Tags = None,
    skip_tags: SkipTags = None,
    extra_vars: Extra = None,
    baseline: Annotated[
        bool,
        typer.Option("--baseline", help="Record each container's fingerprint as the new baseline."),
    ] = False,
    baseline_file: Annotated[
        Path, typer.Option("--baseline-file", help="Where baselines live.")
    ] = Path("~/.local/state/pctfleet/baseline.json"),
    forks: Forks = 10,
    as_json: Json = False,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 600.0,
    connect_timeout: o.ConnectTimeout = 10.0,
) -> int:
    """Find drift: the playbook in check mode plus a fingerprint, one pct exec per container.

    Example: pctfleet audit -i inventory/prod.yml

    Each container gets the tasks that would change (expected vs actual) and,
    once a baseline was recorded (--baseline), every version, link, overlay
    hash or pip package that differs from it. A version matrix shows which
    containers differ from the rest. Exit 0 no drift, 2 drift, 1 error
    (an unreachable container is never reported clean).
    """
    from pctfleet.cli.auditview import exit_code, render, to_json
    from pctfleet.cli.report import make_console
    from pctfleet.cuda import audit as drift
    from pctfleet.inventory import parse_extra_vars
    from pctfleet.run.engine import RunOptions
    from pctfleet.run.playbookrun import RunRequest, execute, prepare

    inv, containers = select_containers(inventory, host, ct, limit)
    options = RunOptions(
        check=True,
        diff=True,
        tags=split_tags(tags),
        skip_tags=split_tags(skip_tags),
        extra_vars=parse_extra_vars(extra_vars or []),
        extra_probes={"fingerprint": drift.fingerprint_snippet},
    )
    conn = o.connect_options(
        user, port, identity, known_hosts, accept_new_host_keys, timeout, connect_timeout
    )
    request = RunRequest(_default_playbook(playbook), inv, containers, conn, options, forks)
    runs = execute(prepare(request))
    recorded = {} if baseline else drift.load_baseline(baseline_file)
    audits = [drift.judge(run, recorded.get(run.key)) for run in runs]
    if baseline:
        count = drift.save_baseline(baseline_file, audits)
        typer.secho(f"baseline: recorded {count} container(s) in {baseline_file}", err=True)
    if as_json:
        typer.echo(to_json(audits))
    else:
        render(make_console(), audits)
    return exit_code(audits)


@app.command("verify")
def verify_command(
    inventory: o.Inventory = None,
    host: o.Host = None,
    ct: o.Ct = None,
    limit: o.Limit = None,
    tests: Annotated[
        list[Path] | None,
        typer.Option(
            "--tests", help="More test files or folders (testinfra, the 'host' fixture); repeat."
        ),
    ] = None,
    keyword: Annotated[
        str | None,
        typer.Option("--keyword", "-k", help="Select checks like pytest -k, e.g. 'server'."),
    ] = None,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Also write pytest's JUnit XML to this file.")
    ] = None,
    extra_vars: Extra = None,
    forks: Forks = 10,
    as_json: Json = False,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 120.0,
    connect_timeout: o.ConnectTimeout = 10.0,
) -> int:
    """Prove each container's end state with testinfra checks over pct (changes nothing).

    Example: pctfleet verify -i inventory/prod.yml -k server

    Checks the matched toolchain, the links, the CCCL overlay, the JIT cache
    and the server (PID, port, /health), with each container's inventory vars
    (venv, server_port, ...; -e overrides them).
    Exit 0 when every check passed in every container, 1 otherwise (a failed
    check, or a container unreachable, missing or stopped), 4 unloadable
    tests, 5 bad options.
    """
    from rich.console import Console

    from pctfleet.inventory import parse_extra_vars
    from pctfleet.verify.runner import VerifyRequest, VerifyUsageError, render, run_verify, to_json

    inv, containers = select_containers(inventory, host, ct, limit)
    conn = o.connect_options(
        user, port, identity, known_hosts, accept_new_host_keys, timeout, connect_timeout
    )
    request = VerifyRequest(
        inv,
        containers,
        conn,
        tests=list(tests or []),
        keyword=keyword,
        junit=junit,
        forks=forks,
        extra_vars=parse_extra_vars(extra_vars),
    )
    try:
        result = run_verify(request)
    except VerifyUsageError as exc:
        raise fail(str(exc), exc.code) from None
    if as_json:
        typer.echo(to_json(result))
    else:
        render(Console(soft_wrap=True), result)
    return result.exit_code()


@app.command("rollout")
def rollout_command(
    playbook: Annotated[
        Path | None,
        typer.Argument(help="Playbook to roll out (not with --resume).", show_default=False),
    ] = None,
    inventory: o.Inventory = None,
    limit: o.Limit = None,
    serial: Annotated[
        str,
        typer.Option(
            "--serial",
            help="Batch sizes, Ansible style: 1, 25%, "
            "or a list like 1,25%,100% (the last repeats).",
        ),
    ] = "1,25%",
    max_fail_percent: Annotated[
        float | None,
        typer.Option(
            "--max-fail-percent",
            min=0,
            max=100,
            help="Stop when a batch's failures exceed this percent.",
        ),
    ] = None,
    any_errors_fatal: Annotated[
        bool, typer.Option("--any-errors-fatal", help="Stop at the first failed container.")
    ] = False,
    per_node: Annotated[
        int | None,
        typer.Option(
            "--per-node",
            min=1,
            help="At most this many containers of one Proxmox node change at once.",
        ),
    ] = None,
    order: Annotated[
        str, typer.Option("--order", help="spread: batches mix nodes; node: node by node.")
    ] = "spread",
    gate: Annotated[
        bool, typer.Option("--gate/--no-gate", help="Verify each batch before the next starts.")
    ] = True,
    gate_checks: Annotated[
        str | None,
        typer.Option(
            "--gate-checks",
            help="pytest -k expression selecting the gate's verify checks.",
            show_default="the batch is converged, plus the checks of the stack parts "
            "the playbook deploys",
        ),
    ] = None,
    gate_tests: Annotated[
        list[Path] | None, typer.Option("--gate-tests", help="More check files for the gate.")
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Continue rollout ID: skip "
            "containers done (after checking they are still healthy).",
        ),
    ] = None,
    tags: Tags = None,
    skip_tags: SkipTags = None,
    extra_vars: Extra = None,
    forks: Forks = 10,
    as_json: Json = False,
    journal_dir: JournalDir = None,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 1800.0,
    connect_timeout: o.ConnectTimeout = 10.0,
) -> int:
    """Roll a playbook across the fleet in batches, checking health between batches.

    Example: pctfleet rollout playbooks/site.yml -i inventory/prod.yml --serial 1,25%
    --max-fail-percent 10 --per-node 1

    When it stops (failures over the threshold, a failed health gate, Ctrl-C),
    containers not reached are untouched; the summary lists done, failed and
    untouched containers, and --resume ID finishes the job. Exit 0 completed,
    2 stopped on failures, 99 interrupted.
    """
    from pctfleet.cli.rollout import RolloutArgs, run_rollout

    conn = o.connect_options(
        user, port, identity, known_hosts, accept_new_host_keys, timeout, connect_timeout
    )
    args = RolloutArgs(
        playbook=playbook,
        inventory=inventory,
        limit=limit,
        serial=serial,
        max_fail_percent=max_fail_percent,
        any_errors_fatal=any_errors_fatal,
        per_node=per_node,
        order=order,
        gate=gate,
        gate_checks=gate_checks,
        gate_tests=gate_tests or [],
        resume=resume,
        tags=tags,
        skip_tags=skip_tags,
        extra_vars=extra_vars or [],
        forks=forks,
        as_json=as_json,
        journal_dir=journal_dir,
    )
    return run_rollout(args, conn, select_containers)


def _register_subcommands() -> None:
    from pctfleet.lab.cli import lab_app

    app.add_typer(lab_app, name="lab", help="A local Proxmox-like lab: sshd nodes, LXC containers.")


_register_subcommands()


def _is_click(exc: BaseException, name: str) -> bool:
    """Typer vendors its own click, so match click's exception classes by name."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _invoke(
    application: typer.Typer, args: list[str] | None = None, prog: str | None = None
) -> int:
    """Run the app with our exit codes: 5 bad options, 4 bad input, 99 interrupted."""
    try:
        result = application(args=args, prog_name=prog, standalone_mode=False)
    except InputError as exc:
        typer.secho(f"error: {visible(exc)}", err=True, fg="red")
        return exitcodes.PARSE_ERROR
    except KeyboardInterrupt:
        typer.secho("interrupted", err=True, fg="red")
        return exitcodes.INTERRUPTED
    except Exception as exc:
        if _is_click(exc, "Abort"):
            return exitcodes.INTERRUPTED
        if _is_click(exc, "ClickException"):
            exc.show()
            return exitcodes.BAD_OPTIONS
        raise
    if result == 130:  # typer's own code for Ctrl-C
        return exitcodes.INTERRUPTED
    return result if isinstance(result, int) else exitcodes.OK


def main() -> None:
    sys.exit(_invoke(app))


def provision_main() -> None:
    """`provision`: the default playbook against one container (see `provision --help`)."""
    sys.exit(_invoke(provision_app(), prog="provision"))


def provision_app() -> typer.Typer:
    """The provision command as a program of its own. Reached through `app` its
    usage line would read `provision provision` (program name, then command)."""
    single = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, context_settings=HELP_OPTIONS
    )
    single.command("provision")(provision_command)
    return single
