"""A playbook over many containers: preflight, then containers in parallel, play by play."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from pctfleet import sh
from pctfleet.errors import InputError, UndefinedVariable
from pctfleet.facts import gathered
from pctfleet.heap import fewer_collections
from pctfleet.jsonfields import json_fields
from pctfleet.modules import REGISTRY, known_args
from pctfleet.modules.args import Context
from pctfleet.modules.controller import fact_names
from pctfleet.playbook import roles
from pctfleet.playbook.loader import (
    expand_include,
    keyword_templates,
    leaves,
    load_playbook,
    select_tasks,
)
from pctfleet.playbook.loops import item_scopes
from pctfleet.playbook.magic import PlayMagic
from pctfleet.playbook.templating import (
    condition,
    names_reached,
    redact,
    render,
)
from pctfleet.run import taskargs
from pctfleet.run.batches import plan_batches
from pctfleet.run.engine import ContainerEngine, HostState, RunOptions
from pctfleet.run.journal import Journal
from pctfleet.run.playflow import PlayFlow, batch_stop
from pctfleet.run.results import ContainerRun, TaskResult
from pctfleet.run.scheduler import schedule, target_limit
from pctfleet.run.signals import sigterm_as_interrupt
from pctfleet.run.taskargs import task_args
from pctfleet.status import SUCCESS, Status
from pctfleet.transport.connections import build_fleet
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.options import ConnectOptions


@dataclass
class RunRequest:
    playbook: Path
    inventory: Any
    containers: list
    connect: ConnectOptions
    options: RunOptions
    forks: int | None = None  # at most this many containers at once; None: the nodes' limits
    stop: threading.Event = field(default_factory=threading.Event)
    per_node: int | None = None  # at most this many containers of one node at once


def container_vars(
    inventory: Any,
    container: Any,
    play: Any,
    extra: dict,
    magic: PlayMagic | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """play defaults < all < group < node < container < play vars < vars_files < role
    vars < extra vars < magic. A vars_files entry skipped here adds to `warnings`."""
    variables = dict(play.defaults or {})
    variables.update(inventory.vars_for(container, {}))
    variables.update(play.vars or {})
    magic_vars = magic.for_container(container) if magic is not None else {}
    files = getattr(play, "vars_files", None)
    if files is not None:  # names rendered with what the play's tasks would see
        found, skipped = files.values_for(variables, {**extra, **magic_vars})
        variables.update(found)
        if warnings is not None:
            warnings += [w for w in skipped if w not in warnings]
    variables.update(extra)
    variables.update(magic_vars)
    return variables


def play_magic(
    request: RunRequest, play: Any, containers: list, batch: list | None = None
) -> PlayMagic:
    """The magic variables of a play over `containers` (running `batch` of them now)."""
    options = request.options
    magic = PlayMagic(request.inventory, containers, options, options.base_dir, batch)
    magic.shared["ansible_play_name"] = play.name
    return magic


def _placeholders(tasks: list, base_dir: str) -> dict[str, Any]:
    """Stand-ins for names only known once tasks ran (register, set_fact, include_vars,
    what a block's rescue reads), in the play's tasks and in the files its includes
    bring in."""
    names = {"ansible_failed_task", "ansible_failed_result"} | _set_by(tasks, base_dir, 0)
    return {name: jinja2.ChainableUndefined(name=name) for name in names}


def _set_by(tasks: list, base_dir: str, depth: int) -> set[str]:
    names = {t.register for t in tasks if t.register}
    for task in tasks:
        if task.module == "set_fact":
            names.update(k for k in task.args if not k.startswith("_"))
        if task.module == "include_vars":
            names.update(_included_names(task, base_dir))
        names |= roles.public_names(task)
        if task.include is not None and depth < MAX_INCLUDE_DEPTH:
            names |= _set_by(_brought_in(task), base_dir, depth + 1)
    return names


MAX_INCLUDE_DEPTH = 8  # an include of itself (under a `when`) is read this deep, no more


def _brought_in(task: Any) -> list:
    """The tasks an include whose arguments are not templates brings in; [] for one
    whose file or role is named by a template (read when reached)."""
    if any(isinstance(v, str) and ("{{" in v or "{%" in v) for v in task.args.values()):
        return []
    try:
        return leaves(expand_include(task, dict(task.args), {})[0])
    except InputError:  # a missing file fails when the include is reached, as in Ansible
        return []


def later_names(play: Any, tasks: list, base_dir: str) -> dict[str, Any]:
    """Stand-ins for what the play's tasks register or set, and for the facts it
    gathers: known when it runs (and in the plays after it)."""
    later = _placeholders(leaves(tasks), base_dir)
    if getattr(play, "gather_facts", False):  # gathered when the container is reached
        later.update({name: jinja2.ChainableUndefined(name=name) for name in gathered.NAMES})
    return later


def _included_names(task: Any, base_dir: str) -> set[str]:
    try:
        args = REGISTRY[task.module].prepare(dict(task.args), Context(base_dir, {}), task.loc)
    except InputError:
        return set()  # a templated file name: checked when the task runs
    return set(args.loaded) | ({args.name} if args.name else set())


def preflight(
    play: Any,
    tasks: list,
    containers: list,
    inventory: Any,
    extra: dict,
    base_dir: str,
    magic: PlayMagic | None = None,
    warnings: list[str] | None = None,
    later: dict[str, Any] | None = None,
) -> None:
    """Render every task for every container before anything changes anywhere.

    An undefined variable or a bad argument is an InputError naming the task,
    raised while no container has been touched. `later`: stand-ins for what this
    play and those before it register, set or gather (`later_names` of this one
    when not given).
    """
    tasks = leaves(tasks)
    later = later_names(play, tasks, base_dir) if later is None else later
    for container in containers:
        found = container_vars(inventory, container, play, extra, magic, warnings)
        variables = {**later, **found}
        named, unknown = _templated_fact_names(tasks, variables, later.keys())
        variables |= {name: jinja2.ChainableUndefined(name=name) for name in named}
        # hostvars holds what tasks set too (a host's set_fact): read, checked when reached.
        deferred = later.keys() | named | {"hostvars"}
        for task in tasks:
            try:
                for scope in _item_scopes(task, variables, deferred, base_dir):
                    _preflight_task(task, scope, deferred, base_dir)
            except UndefinedVariable:
                if not unknown:  # else a set_fact may name it only at run time
                    raise


def _templated_fact_names(tasks: list, variables: dict, later: Any) -> tuple[set[str], bool]:
    """The names `set_fact` tasks write as templates (`"port_{{ model }}"`), rendered
    with this container's variables, and whether some can be rendered only at run time
    (from a registered result, say)."""
    names, unknown = set(), False
    for task in tasks:
        if task.module != "set_fact" or not any("{{" in str(k) for k in task.args):
            continue
        scope = {**variables, **task.vars}
        if not names_reached([str(k) for k in task.args], scope).isdisjoint(later):
            unknown = True
            continue
        try:
            names |= set(fact_names(dict(task.args), scope, task.loc))
        except InputError:
            unknown = True
    return names, unknown


def _item_scopes(task: Any, variables: dict, later: Any, base_dir: str) -> list[dict]:
    """The variables the task runs with, once per loop item; none when its loop
    reads a result known only at run time or calls a lookup (it is checked when
    reached)."""
    if taskargs.loop_calls_lookup(task, variables):
        return []
    try:
        return item_scopes(task, variables, base_dir, f"{task.loc}: task '{task.name}'")
    except InputError:
        if names_reached(task.loop.terms, {**variables, **task.vars}).isdisjoint(later):
            raise
        return []


def _preflight_task(task: Any, variables: dict, later: Any, base_dir: str) -> None:
    where = f"{task.loc}: task '{task.name}'"
    # A task reading a result not known yet, or calling a lookup, is checked when reached.
    if taskargs.reads_any(task, variables, taskargs.LOOKUP_CALLS.union(later)):
        return
    try:
        if task.when and not condition(task.when, variables, where=where):
            return  # skipped here: its arguments may rely on what is not defined
        task_args(task, variables, base_dir, where)  # the engine finds them made
        for template in keyword_templates(task):  # rendered as the task starts
            render(template, variables, where=where)
    except InputError as exc:
        exc.message = redact(exc.message, variables)  # a secret quoted back stays hidden
        exc.args = (exc.message,)
        raise


@dataclass
class PreparedRun:
    """A playbook that loaded and rendered for every container: safe to start."""

    request: RunRequest
    plays: list  # (play, containers)
    warnings: list[str] = field(default_factory=list)  # the playbook's, for the operator

    @property
    def containers(self) -> list:
        """The selected containers some play matches, in selection order. One that no
        play matches is no part of the run, as a host in ansible-playbook's recap."""
        matched = {c.key for _, members in self.plays for c in members}
        return [c for c in self.request.containers if c.key in matched]


def prepare(request: RunRequest) -> PreparedRun:
    """Load and preflight: every InputError surfaces here, before any connection."""
    with fewer_collections():  # every container's tables are built in one go
        return _prepare(request)


def _prepare(request: RunRequest) -> PreparedRun:
    book = load_playbook(request.playbook, known_args(), request.options.roles_path)
    request.options.base_dir = str(Path(request.playbook).resolve().parent)
    plays = [(play, _play_containers(request, play, book.warnings)) for play in book.plays]
    later: dict[str, Any] = {}  # a container's facts and results live on in later plays
    for play, containers in plays:
        tasks = select_tasks(
            play.task_list(request.options.force_handlers),
            request.options.tags,
            request.options.skip_tags,
        ) + list(play.handlers)
        later |= later_names(play, tasks, request.options.base_dir)
        preflight(
            play,
            tasks,
            containers,
            request.inventory,
            request.options.extra_vars,
            request.options.base_dir,
            play_magic(request, play, containers),
            book.warnings,
            dict(later),
        )
    return PreparedRun(request, plays, book.warnings)


def execute(
    prepared: PreparedRun,
    journal: Journal | None = None,
    on_result: Callable[[ContainerRun, TaskResult], None] = lambda run, result: None,
    fleet_factory: Callable[[list, ConnectOptions], Any] | None = None,
) -> list[ContainerRun]:
    """Run every play; a container that failed or was unreachable skips later plays.

    `fleet_factory` (default `build_fleet`) makes the targets: anything with
    `.targets` (one per container, in order) and `.close()`, such as the
    simulated fleet of `pctfleet.transport.sim`.
    """
    with fewer_collections():  # every container's results stay until the run ends
        return _execute(prepared, journal, on_result, fleet_factory)


def _execute(
    prepared: PreparedRun,
    journal: Journal | None,
    on_result: Callable[[ContainerRun, TaskResult], None],
    fleet_factory: Callable[[list, ConnectOptions], Any] | None,
) -> list[ContainerRun]:
    request = prepared.request
    # Only the containers some play matches: one no play matches is no part of the run
    # (no result, no connection), as a host outside every play in ansible-playbook.
    played = prepared.containers
    runs = {c.key: ContainerRun(c.node.name, c.ctid, c.name) for c in played}
    fleet = (fleet_factory or build_fleet)(played, request.connect)
    targets = {c.key: t for c, t in zip(played, fleet.targets, strict=True)}
    for target in targets.values():
        if isinstance(target, LocalTarget):  # --local: where ansible-playbook -c local runs
            target.cwd = request.options.base_dir
    kept = {c.key: HostState() for c in played}  # from play to play
    try:
        for play, containers in prepared.plays:
            alive = [c for c in containers if runs[c.key].status in SUCCESS]
            stopped = _run_play(request, play, alive, targets, runs, journal, on_result, kept)
            if stopped:  # as Ansible: a play stopped by its failures ends the run
                idle = [r for r in runs.values() if not r.tasks and r.status in SUCCESS]
                _not_reached(idle, play, stopped, stopped)
                break
    finally:
        fleet.close()
        taskargs.forget()
        sh.forget()
    for run in runs.values():
        run.finish_status()
    return list(runs.values())


def execute_journaled(
    prepared: PreparedRun,
    journal: Journal,
    on_result: Callable[[ContainerRun, TaskResult], None],
    on_interrupt: Callable[[], None],
    **meta: Any,
) -> list[ContainerRun]:
    """`execute`, journaled from start to close; SIGTERM stops it like Ctrl-C.
    `meta` (the command, its pid) goes into the start record.

    The run's containers are those a play matches (`PreparedRun.containers`).
    Interrupted, no new task starts; the journal says so and the interrupt goes on.
    """
    request = prepared.request
    keys = [c.key for c in prepared.containers]
    check = request.options.check
    journal.write("start", playbook=str(request.playbook), containers=keys, check=check, **meta)
    try:
        with sigterm_as_interrupt():
            return execute(prepared, journal, on_result)
    except KeyboardInterrupt:
        request.stop.set()
        journal.write("interrupted")
        on_interrupt()
        raise
    finally:
        journal.close()


def _play_containers(request: RunRequest, play: Any, warnings: list[str]) -> list:
    # In the play's order, as ansible-core filters the play's hosts by the --limit: its
    # `serial` batches and `run_once` follow the pattern, not the selection.
    selected = {c.key: c for c in request.containers}
    matched = request.inventory.matching(play_patterns(request, play))
    containers = [selected[c.key] for c in matched if c.key in selected]
    if not containers:  # ansible-playbook's "skipping: no hosts matched"
        warnings.append(f"{play.loc}: play {play.name!r}: no selected container matches "
                        f"its hosts {', '.join(play.hosts)!r}: skipped")  # fmt: skip
    return containers


# Known to ansible-core only once a host is: not when it renders a play's `hosts:`.
_HOST_LATER = ("hostvars", "inventory_dir", "inventory_file", "ansible_inventory_sources")


def play_patterns(request: RunRequest, play: Any) -> list[str]:
    """The play's `hosts:` patterns, a template rendered as ansible-core renders it
    before the play has hosts (measured, 2.19): with -e, the play's vars, vars_files
    and roles' vars and defaults, and the magic variables no host is needed for
    (groups, ansible_play_hosts, playbook_dir, ...). No inventory variable is known
    then, not even `all`'s: a name only the inventory defines is an error, as there.
    A template may give a list: each item is a pattern."""
    if not any("{{" in item or "{%" in item for item in play.hosts):
        return list(play.hosts)
    magic = play_magic(request, play, request.containers).shared
    variables = {
        **(play.defaults or {}),
        **play.vars,
        **(request.options.extra_vars or {}),
        **{name: value for name, value in magic.items() if name not in _HOST_LATER},
    }
    where = f"{play.loc}: play {play.name!r}: 'hosts'"
    try:
        rendered = render(list(play.hosts), variables, where=where)
    except UndefinedVariable as exc:
        raise UndefinedVariable(
            f"{exc.message} (hosts: is rendered before the play starts, with -e, the "
            "play's vars and vars_files and magic variables such as groups; no "
            "inventory variable is known then)",
            detail=exc.detail,
        ) from None
    return [str(item) for item in _flat(rendered) if str(item).strip()]


def _flat(value: Any) -> list:
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def in_step(play: Any, tasks: list) -> bool:
    """Whether the play's containers move in step (PlayFlow): where one container's
    failure or `meta: end_play`/`end_batch` ends the play for the others."""
    max_fail = play.max_fail_percentage
    if play.any_errors_fatal or (max_fail is not None and max_fail < 100):
        return True
    for task in leaves([*tasks, *play.handlers]):
        ends = task.module == "meta" and task.args.get("free_form") in ("end_play", "end_batch")
        if task.any_errors_fatal or ends:
            return True
    return False


def _run_play(request, play, containers, targets, runs, journal, on_result, kept) -> str:  # noqa: ANN001
    """Run the play batch by batch (`serial`); why it stopped the run, or ""."""
    tasks = select_tasks(
        play.task_list(request.options.force_handlers),
        request.options.tags,
        request.options.skip_tags,
    )
    flow = PlayFlow([])
    magic = play_magic(request, play, containers)

    def report(run: ContainerRun, result: TaskResult) -> None:
        if journal:
            journal.write("task", container=run.key, play=play.name, **result.as_json())
        on_result(run, result)

    def one(container: Any) -> None:
        try:
            if request.stop.is_set():
                return
            extra = request.options.extra_vars
            variables = container_vars(request.inventory, container, play, extra, magic)
            engine = ContainerEngine(
                targets[container.key],
                runs[container.key],
                variables,
                request.options,
                report,
                request.stop,
                flow,
                gather_facts=play.gather_facts,
            )
            # Roles' defaults nothing overrode: a role's own defaults win over them.
            defaults = play.defaults or {}
            engine.default_names |= {n for n in defaults if variables.get(n) is defaults[n]}
            engine.carry_in(kept[container.key])
            try:
                engine.play(tasks, list(play.handlers))
            finally:
                engine.carry_out(kept[container.key])
        finally:
            flow.leave(container.key)  # whatever happened, nobody waits for it
        runs[container.key].finish_status()  # "changed" in the journal too, not "ok"
        if journal:
            run = runs[container.key]
            names = "container play status message remote_calls remote_reruns"
            journal.write("container", **json_fields(run, names, container=run.key, play=play.name))

    batches = plan_batches(containers, play.serial) if play.serial else [containers]
    for index, batch in enumerate(batches, start=1):
        keys = [c.key for c in batch]
        fatal, max_fail = play.any_errors_fatal, play.max_fail_percentage
        flow = PlayFlow(keys, fatal, max_fail, lockstep=in_step(play, tasks))
        magic = play_magic(request, play, containers, batch)
        limit = node_limit(targets)
        args = (request.forks, request.per_node, request.stop, limit)
        schedule(batch, one, *args, starting=flow.starting, cancelled=flow.cancelled)
        stopped = batch_stop(index, [runs[c.key] for c in batch], flow)
        if stopped or (flow.end_play and index < len(batches)):
            why = stopped or f"batch {index}: {flow.ended}"
            _not_reached([runs[c.key] for b in batches[index:] for c in b], play, why, stopped)
            return stopped
    return ""


def node_limit(targets: dict) -> Callable[[Any], int]:
    """A container's node limit, as its target's transport knows it now."""
    return lambda container: target_limit(targets[container.key])


def _not_reached(runs: list[ContainerRun], play: Any, why: str, failure: str) -> None:
    """Containers of later batches: untouched by this play (after a failure, by any)."""
    for run in runs:
        if failure and not run.tasks:
            run.status = Status.UNTOUCHED
        run.message = f"play '{play.name}' not run here: {why}"
