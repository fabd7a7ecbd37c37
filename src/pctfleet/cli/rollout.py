"""`pctfleet rollout`: from command-line values (or a journal, on resume) to a Rollout."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from pctfleet import exitcodes
from pctfleet.cli.groups import flag, grouped, opt, use
from pctfleet.cli.options import (
    Connection,
    Forks,
    Output,
    Run,
    Selection,
    configured_inventory,
    fail,
    select_containers,
    tag_sets,
)
from pctfleet.cli.report import make_console, warn
from pctfleet.errors import InputError
from pctfleet.run.batches import order_containers, parse_serial
from pctfleet.run.engine import RunOptions
from pctfleet.run.journal import Journal
from pctfleet.run.playbookrun import PreparedRun
from pctfleet.run.rollout import (
    DEFAULT_DIR,
    Rollout,
    RolloutPlan,
    RolloutResult,
    journal_path,
    resume_state,
    write_resume,
    write_start,
)
from pctfleet.textout import line
from pctfleet.transport.options import ConnectOptions


@dataclass
class Batches:
    """How the rollout goes: batch sizes, when to stop, the health gate, a resume."""

    serial: str = opt(
        "--serial",
        "Batch sizes, Ansible style: 1, 25%, or a list like 1,25%,100% (the last repeats).",
        "1,25%",
    )
    max_fail_percent: float | None = opt(
        "--max-fail-percent",
        "Go on after a batch whose failed or unreachable containers stay within this "
        "percent of it (a batch that failed whole still stops the rollout).",
        min=0,
        max=100,
        shown="none: any failure stops it",
    )
    any_errors_fatal: bool = flag(
        "--any-errors-fatal",
        "Stop at the first failed container: the rest of its batch stops before its next "
        "task, and counts as failed.",
    )
    per_node: int | None = opt(
        "--per-node", "At most this many containers of one Proxmox node change at once.", min=1
    )
    order: str = opt("--order", "spread: batches mix nodes; node: node by node.", "spread")
    gate: bool = flag("--gate/--no-gate", "Verify each batch before the next starts.", True)
    gate_checks: str | None = opt(
        "--gate-checks",
        "pytest -k expression selecting the gate's verify checks (they see -e too).",
        shown="the batch is converged, plus the checks of the stack parts the playbook deploys",
    )
    gate_tests: list[Path] | None = opt("--gate-tests", "More check files for the gate.")
    resume: str | None = opt(
        "--resume",
        "Continue rollout ID as it was started: skip containers done (after checking they "
        "are still healthy). Takes only -e (added to the journal's), --forks, --json, "
        "--journal-dir, and the connection and vault options.",
    )


@dataclass
class Journals:
    journal_dir: Path | None = opt(
        "--journal-dir", "Where rollout journals go (and --resume looks).", shown=str(DEFAULT_DIR)
    )


# What --resume takes from the journal instead: given with it, they are refused.
FROM_JOURNAL = frozenset({
    "playbook", "inventory", "limit", "serial", "max_fail_percent", "any_errors_fatal",
    "per_node", "order", "gate", "gate_checks", "gate_tests", "tags", "skip_tags",
    "force_handlers",
})  # fmt: skip


@grouped(
    sel=use(Selection, "inventory", "limit", *Selection.VAULT_FIELDS),
    batches=Batches,
    run=use(Run, "tags", "skip_tags", "extra_vars", "force_handlers"),
    out=use(Output, "as_json"),
    journals=Journals,
    conn=use(Connection, timeout=1800.0),
)
def rollout_command(
    ctx: typer.Context,
    playbook: Annotated[
        Path | None,
        typer.Argument(help="Playbook to roll out (not with --resume).", show_default=False),
    ] = None,
    *,
    sel: Selection,
    batches: Batches,
    run: Run,
    forks: Forks = None,
    out: Output,
    journals: Journals,
    conn: Connection,
) -> int:
    """Roll a playbook across the fleet in batches, checking health between batches.

    A batch in which a container failed or was unreachable stops the rollout
    (a failed canary stops everything); --max-fail-percent P goes on while a
    batch's failures stay within P% (a batch that failed whole still stops it),
    --any-errors-fatal stops at the first failure, mid-batch. A failed health
    gate always stops it. Containers not reached are untouched; the summary
    lists done, failed and untouched containers, and --resume ID finishes the
    job. Without -i, ansible.cfg's inventory (or ANSIBLE_INVENTORY).

    Exit 0 completed (every container done), 2 a container failed (the rollout
    stopped, or ran every batch within --max-fail-percent), 4 bad inventory,
    playbook or vars, 5 bad options, 99 interrupted.

    Examples:

      pctfleet rollout playbooks/site.yml -i /var/lib/pctfleet-lab/inventory.yml --serial 1,25%
      pctfleet rollout playbooks/site.yml -i /var/lib/pctfleet-lab/inventory.yml --per-node 1
      pctfleet rollout playbooks/site.yml -i /var/lib/pctfleet-lab/inventory.yml --json
    """
    if batches.resume:
        _refuse_with_resume(ctx)
    sel.unlock()
    args = RolloutArgs(
        playbook=playbook,
        inventory=list(sel.inventory or []),
        limit=sel.limit,
        **{**asdict(batches), "gate_tests": batches.gate_tests or []},
        tags=run.tags,
        skip_tags=run.skip_tags,
        extra_vars=run.extra_vars or [],
        force_handlers=run.force_handlers,
        forks=forks,
        as_json=out.as_json,
        journal_dir=journals.journal_dir,
    )
    return run_rollout(args, conn.options())


def _refuse_with_resume(ctx: typer.Context) -> None:
    """--resume repeats the journal's rollout: what would change it is refused, not ignored."""
    given = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name)
        if param.name not in FROM_JOURNAL or source is None or source.name == "DEFAULT":
            continue
        if param.name == "playbook":
            given.append("PLAYBOOK")
        elif getattr(param, "secondary_opts", None) and not ctx.params.get(param.name):
            given.append(param.secondary_opts[0])  # --no-gate
        else:
            given.append(param.opts[0])
    if given:
        raise fail(
            f"--resume continues the rollout as its journal recorded it: drop {', '.join(given)} "
            "(with --resume only -e, --forks, --json, --journal-dir, and connection and "
            "vault options apply)",
            exitcodes.BAD_OPTIONS,
        )


@dataclass
class RolloutArgs:
    playbook: Path | None
    inventory: list[Path] | None  # every -i, in order
    limit: str | None = None
    serial: str = "1,25%"
    max_fail_percent: float | None = None
    any_errors_fatal: bool = False
    per_node: int | None = None
    order: str = "spread"
    gate: bool = True
    gate_checks: str | None = None
    gate_tests: list[Path] = field(default_factory=list)
    resume: str | None = None
    tags: str | None = None
    skip_tags: str | None = None
    extra_vars: list[str] = field(default_factory=list)
    force_handlers: bool = False
    forks: int | None = None
    as_json: bool = False
    journal_dir: Path | None = None

    def params(self) -> dict:
        """What a resume needs to repeat this rollout exactly, secret values left out."""
        data = asdict(self)
        data.pop("resume")
        data["extra_vars"] = [_without_secrets(item) for item in self.extra_vars]
        # Absolute: a resume may run from another folder.
        for key in ("playbook", "journal_dir"):
            data[key] = data[key] and Path(data[key]).absolute()
        data["inventory"] = [Path(path).absolute() for path in self.inventory or []]
        data["gate_tests"] = [Path(path).absolute() for path in self.gate_tests]
        from pctfleet.inventory.limit import with_absolute_files

        data["limit"] = with_absolute_files(self.limit)
        return json.loads(json.dumps(data, default=str))


def _without_secrets(item: str) -> str:
    """A -e value as the journal keeps it: secret values (see templating.redact) hidden.

    A file (@vars.yml) is kept as its name; a value with secrets becomes a JSON
    mapping whose secrets read ********, to be given again with -e on --resume.
    """
    from pctfleet.inventory import parse_extra_vars
    from pctfleet.playbook.templating import REDACTED, secret_values

    if item.strip().startswith("@"):
        return "@" + str(Path(item.strip()[1:]).absolute())
    values = parse_extra_vars([item])
    hidden = secret_values(values)
    if not hidden:
        return item

    def hide(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: hide(v) for k, v in value.items()}
        if isinstance(value, list):
            return [hide(v) for v in value]
        return REDACTED if isinstance(value, str | int | float) and str(value) in hidden else value

    return json.dumps(hide(values))


def _from_journal(args: RolloutArgs) -> tuple[RolloutArgs, list[str]]:
    """The rollout as its journal recorded it; only -e, --forks, --json and
    --journal-dir (and the connection, given to `run_rollout` apart) come from `args`."""
    path = journal_path(args.journal_dir, args.resume)
    if not path.exists():
        raise fail(f"--resume {args.resume}: no rollout journal {path}", exitcodes.BAD_OPTIONS)
    start, done = resume_state(path)
    params = start["params"]
    # Secret values were not journaled: the -e given with --resume supplies them (and wins).
    params["extra_vars"] = [*params["extra_vars"], *args.extra_vars]
    _check_secrets_given(params["extra_vars"])
    restored = RolloutArgs(
        **{
            **params,
            "playbook": Path(params["playbook"]),
            "inventory": _journaled_sources(params["inventory"]),
            "gate_tests": [Path(p) for p in params["gate_tests"]],
            "journal_dir": args.journal_dir,
            "as_json": args.as_json,
            "resume": args.resume,
            "forks": args.forks if args.forks is not None else params["forks"],
        }
    )
    return restored, done


def _journaled_sources(value: str | list[str]) -> list[Path]:
    """The -i of a journal: a list, or (journals of one source only) one path."""
    return [Path(value)] if isinstance(value, str) else [Path(item) for item in value]


def _check_secrets_given(items: list[str]) -> None:
    from pctfleet.inventory import parse_extra_vars
    from pctfleet.playbook.templating import REDACTED

    missing = sorted(k for k, v in parse_extra_vars(items).items() if REDACTED in json.dumps(v))
    if missing:
        raise InputError(
            "--resume: secret variables are not kept in the journal; give them again: "
            + " ".join(f"-e {name}=..." for name in missing)
        )


def verify_gate(plan: RolloutPlan, args: RolloutArgs):
    """The health gate: what the playbook manages, or the `--gate-checks`/`--gate-tests` given."""
    from pctfleet.run.gate import default_gate

    if args.gate_checks or args.gate_tests:
        return _verify(plan, args, args.gate_checks)
    return default_gate(plan, lambda keyword: _verify(plan, args, keyword))


def _verify(plan: RolloutPlan, args: RolloutArgs, keyword: str | None):
    """`verify` with `keyword` (and --gate-tests) on the batch's containers."""
    from pctfleet.verify.runner import VerifyRequest, run_verify

    def gate(containers: list) -> dict[str, tuple[bool, str]]:
        request = VerifyRequest(
            plan.inventory,
            containers,
            plan.connect,
            tests=list(args.gate_tests),
            keyword=keyword,
            forks=args.forks,
            # Settings the playbook was given with -e (server_port, ...) are what it deployed.
            extra_vars=dict(plan.options.extra_vars),
        )
        verdicts = {}
        for result in run_verify(request).containers:
            failing = [c.id for c in result.checks if c.outcome not in {"passed", "skipped"}]
            why = result.message or ", ".join(failing)
            verdicts[result.container] = (result.status == "passed", why)
        return verdicts

    return gate


def run_rollout(args: RolloutArgs, connect: ConnectOptions) -> int:
    done: list[str] = []
    if not args.gate and (args.gate_checks or args.gate_tests):
        given = "--gate-checks" if args.gate_checks else "--gate-tests"
        raise fail(f"--no-gate runs no health gate: drop {given}", exitcodes.BAD_OPTIONS)
    if args.resume:
        args, done = _from_journal(args)
    else:
        _check_new(args)
    inventory, containers = select_containers(
        args.inventory, None, None, args.limit, Path(args.playbook).parent
    )
    plan = _plan(args, inventory, containers, connect)
    gate = verify_gate(plan, args) if args.gate else None
    journal = Journal(Path(args.journal_dir or DEFAULT_DIR), args.resume)
    plan.options.run_id = journal.run_id
    console = make_console(stderr=True)
    show = _printer(args.as_json, console)
    if args.resume:
        write_resume(journal)
    else:
        write_start(journal, plan, args.params())
    rollout = Rollout(plan, journal, gate, show)
    with _watch(rollout, console, args.as_json):
        done = _still_healthy(rollout, done, containers)
        show({"kind": "rollout", "rollout_id": journal.run_id, "journal": str(journal.path)})
        result = rollout.run_journaled(done)
    return _finish(result, args.as_json)


def _check_new(args: RolloutArgs) -> None:
    """A new rollout's playbook, inventory and order, checked before its journal exists;
    the inventory ansible.cfg names is written down, so a resume reads the same one."""
    if args.playbook is None:
        raise fail("rollout needs a PLAYBOOK (or --resume ID)", exitcodes.BAD_OPTIONS)
    if not Path(args.playbook).is_file():
        raise fail(f"playbook not found: {args.playbook}", exitcodes.BAD_OPTIONS)
    args.inventory = args.inventory or configured_inventory()
    if not args.inventory:
        raise fail(
            "rollout needs -i INVENTORY (or 'inventory =' in ansible.cfg, or ANSIBLE_INVENTORY)",
            exitcodes.BAD_OPTIONS,
        )
    order_containers([], args.order)


def _watch(rollout: Rollout, console: Any, as_json: bool) -> Any:
    """The progress display of a rollout: the batch (and its health gate) over the
    fleet's containers done, in flight and waiting (pctfleet.cli.progress)."""
    from pctfleet.cli.progress import display_for, play_counts

    where = {"batch": "", "phase": ""}
    display = display_for(console, [], as_json=as_json)  # sized once the playbook is loaded
    display.title = lambda: ", ".join(text for text in where.values() if text)
    rollout.plan.options.observer = display.tracker

    def on_prepared(prepared: PreparedRun) -> None:
        warn(console, prepared.warnings)
        display.tracker.expect(play_counts(prepared.plays))

    rollout.on_prepared = on_prepared
    shown, gate = rollout.on_event, rollout.gate

    def on_event(event: dict) -> None:
        if event["kind"] == "batch-start":
            where["batch"] = f"batch {event['batch']}/{event['of']}"
            where["phase"] = f"{len(event['containers'])} container(s)"
        shown(event)

    def gated(containers: list) -> dict[str, tuple[bool, str]]:
        where["phase"] = f"health gate on {len(containers)} container(s)"
        return gate(containers)

    rollout.on_event = on_event
    rollout.gate = gated if gate is not None else None
    return display


def _plan(args: RolloutArgs, inventory: Any, containers: list, connect) -> RolloutPlan:  # noqa: ANN001
    from pctfleet import ansiblecfg
    from pctfleet.inventory import parse_extra_vars

    tags, skip_tags = tag_sets(args.tags, args.skip_tags)
    options = RunOptions(
        tags=tags,
        skip_tags=skip_tags,
        extra_vars=parse_extra_vars(args.extra_vars),
        force_handlers=args.force_handlers or ansiblecfg.read().force_handlers,
    )
    return RolloutPlan(
        args.playbook,
        inventory,
        ", ".join(map(str, args.inventory or [])),
        containers,
        connect,
        options,
        parse_serial(args.serial),
        args.max_fail_percent,
        args.any_errors_fatal,
        args.per_node,
        args.order,
        args.forks,
    )


def _still_healthy(rollout: Rollout, done: list[str], containers: list) -> list[str]:
    """On resume, a container counts as done only if it still passes the gate."""
    if not done or rollout.gate is None:
        return done
    verdicts = rollout.gate([c for c in containers if c.key in done])
    healthy = [key for key in done if verdicts.get(key, (True, ""))[0]]
    rollout.event("resume-check", done=done, healthy=healthy)
    return healthy


def _printer(as_json: bool, console: Any = None):
    console = console or make_console(stderr=True)
    seen: dict[str, Any] = {}

    def show(event: dict) -> None:
        if as_json:
            typer.echo(json.dumps(event, default=str))
            return
        if event["kind"] in {"rollout-plan", "batch-start"}:
            seen["of"] = event.get("of") or len(event.get("batches") or []) or None
        for text in _event_lines(event, seen.get("of")):
            console.print(text)

    return show


def _event_lines(event: dict, of: int | None) -> list[Text]:
    """A rollout event as readable lines (nothing for those the summary covers)."""
    kind = event["kind"]
    if kind == "batch-start":
        return [
            line(
                (f"batch {event['batch']}/{event['of']}", "bold"), ": ", _keys(event["containers"])
            )
        ]
    if kind == "task" and event["status"] in {"changed", "failed"}:
        return [line(f"  {event['status']:8} {event['container']:14} {event['name']}")]
    if kind == "container":
        return [line(f"  {event['container']}: {event['status']} {event['message']}")]
    if kind == "gate":
        return _gate_lines(event)
    if kind == "rollout":
        return [line(f"rollout {event['rollout_id']}: journal {event['journal']}")]
    if kind == "rollout-stop":
        return [_stop_line(event, of)]
    if kind == "resume-check":
        healthy, done = event["healthy"], event["done"]
        redo = [key for key in done if key not in healthy]
        text = line(f"resume: {len(healthy)} of {len(done)} finished container(s) still healthy")
        return [text.append_text(line("; to run again: ", _keys(redo))) if redo else text]
    return []


def _gate_lines(event: dict) -> list[Text]:
    verdict = ("passed", "") if event["passed"] else ("FAILED", "red")
    lines = [line(f"  health gate after batch {event['batch']}: ", verdict)]
    for key, result in event.get("results", {}).items():
        if not result["passed"]:
            lines.append(line(f"    {key}: {result['message']}"))
    return lines


def _stop_line(event: dict, of: int | None) -> Text:
    """`rollout stopped after batch 1 of 3: 2/4 failed, over --max-fail-percent 10`."""
    reason = str(event.get("reason", ""))
    batch = event.get("batch")
    if batch is None:
        return line(("rollout stopped", "bold red"), f": {reason}")
    where = f"after batch {batch}" + (f" of {of}" if of else "")
    return line(
        ("rollout stopped", "bold red"), f" {where}: {reason.removeprefix(f'batch {batch}: ')}"
    )


def _keys(keys: list[str]) -> Text:
    return line(", ".join(str(key) for key in keys) or "none")


def _finish(result: RolloutResult, as_json: bool) -> int:
    if as_json:
        typer.echo(json.dumps({"kind": "summary", **result.as_json()}))
    else:
        console = make_console()
        state = {
            "stopped": f"stopped: {result.stopped}",
            "interrupted": f"stopped: {result.stopped}",
            "failures": f"every batch ran; {len(result.failed)} failed (within --max-fail-percent)",
        }.get(result.outcome, "completed")
        console.print(line(f"rollout {result.rollout_id}: {state}"))
        for label, keys in (
            ("done", result.done),
            ("failed", result.failed),
            ("untouched", result.untouched),
        ):
            console.print(line(f"  {label:9} {len(keys):3}  {' '.join(keys)}"))
        if result.outcome != "completed":
            console.print(line(f"  resume: pctfleet rollout --resume {result.rollout_id}"))
    return result.exit_code
