"""Plan -> check -> apply for one container: the heart of a run.

Facts for every task still to come are read in one probe round trip. A task
whose facts say "already so" costs nothing more; a task that must change runs
its script, and the facts of the tasks after it are read again (in one round
trip) because the change may have altered them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pctfleet.errors import InputError, brief
from pctfleet.facts import gathered
from pctfleet.facts import script as probe
from pctfleet.inventory import VAR_NAME_RE
from pctfleet.modules import REGISTRY
from pctfleet.modules.base import Fact, Plan, as_bool, q
from pctfleet.modules.validate import failed_validation
from pctfleet.playbook.loader import Block, expand_include, select_tasks, should_run
from pctfleet.playbook.lookups import warnings_kept
from pctfleet.playbook.loops import loop_items, loop_vars
from pctfleet.playbook.magic import OMIT, HostEntry
from pctfleet.playbook.templating import (
    HOLDS,
    condition,
    first_false,
    hider,
    redact,
    redact_data,
    render,
    unsafe,
)
from pctfleet.run import notify
from pctfleet.run.delegate import Controller, delegated
from pctfleet.run.failure import failure_output
from pctfleet.run.journal import new_run_id
from pctfleet.run.lock import LockTimeout, RunLock, busy, holder
from pctfleet.run.observe import Observer
from pctfleet.run.playflow import Outcome, PlayEnded, PlayFlow
from pctfleet.run.results import ContainerRun, TaskResult
from pctfleet.run.taskargs import calls_lookup, task_args
from pctfleet.transport.base import CommandTimeout, Target, TransferError, TransportError
from pctfleet.transport.files import ValidationFailed, push

HIDDEN = "output hidden (no_log: true)"

# What every task registers; the rest of a registered result is the module's own report.
_NOT_DETAILS = frozenset(
    {"changed", "failed", "msg", "rc", "stdout", "stderr", "stdout_lines", "ansible_facts"}
    | {"stderr_lines"}
    | {"log_tail"}  # the stderr of a failed server launch, already in msg
)


@dataclass
class RunOptions:
    check: bool = False
    diff: bool = False
    tags: set[str] | None = None
    skip_tags: set[str] | None = None
    force_handlers: bool = False  # --force-handlers or ansible.cfg; a play's own wins
    extra_vars: dict[str, Any] = field(default_factory=dict)
    base_dir: str = "."
    # More snippets for the first probe (audit's fingerprint): key -> f(vars) -> sh.
    extra_probes: dict[str, Callable[[dict], str]] = field(default_factory=dict)
    run_id: str = field(default_factory=new_run_id)
    lock_lease: float = 60.0
    lock_wait: float = 300.0
    roles_path: list[str] = field(default_factory=list)  # -r: folders of roles
    verbosity: int = 0  # -v's count: ansible_verbosity, and debug's `verbosity`
    observer: Observer = field(default_factory=Observer)  # a progress display, or no one


class Interrupted(Exception):
    """The operator asked to stop: no new task starts."""


class Replan(Exception):
    """Facts may be stale (we waited for another run): read them again, decide again."""


class TaskFailed(Exception):
    """This container's run stops here (a task failed and ignore_errors is off).

    `task` and `result` name the failed task (a block's `rescue` reads them)."""

    def __init__(self, message: str, task: Any = None, result: TaskResult | None = None) -> None:
        super().__init__(message)
        self.task, self.result = task, result


class FailedWithBatch(TaskFailed):
    """Another container of the batch failed under any_errors_fatal: this one fails
    with it (no task of its own failed). A block's `rescue` takes it; else the play
    ends here for this container, and its status stays what it was."""


@dataclass
class HostState:
    """A container's facts and registered/set_fact values, from one play to the next."""

    facts: dict[str, Any] = field(default_factory=dict)
    runtime: dict[str, Any] = field(default_factory=dict)
    facts_owed: bool = False  # a play gathered facts, none of its tasks read them
    set_names: set[str] = field(default_factory=set)  # set_fact and register names


class _HandlerPass:
    """One flush: the handlers to run, in their order, and those notified while it
    runs (ansible-core notifies at once during a flush: one listed after the
    running handler runs in this pass, one before it at the next flush)."""

    def __init__(self, pending: list[int]) -> None:
        self.pending = sorted(pending)
        self.position = -1

    def pairs(self, engine: ContainerEngine) -> Iterator[tuple[int, Any]]:
        while True:
            self._take(engine)
            if not self.pending:
                return
            self.position = self.pending.pop(0)
            yield self.position, engine.handlers[self.position]

    def _take(self, engine: ContainerEngine) -> None:
        """Notifications made since the last handler ran: ahead of it, into this pass."""
        if not engine.notified:
            return
        found = set(engine._notified()) - engine.deferred
        engine.notified = []
        ahead = {n for n in found if n > self.position}
        engine.deferred |= found - ahead
        self.pending = sorted(set(self.pending) | ahead)

    def left(self, engine: ContainerEngine) -> set[int]:
        """What stays notified for the next flush: not reached in this one."""
        self._take(engine)
        return set(self.pending)


def _skipped(false_condition: Any) -> dict[str, Any]:
    """What ansible-core registers for a task (or loop item) its `when` skipped."""
    return {
        "changed": False,
        "false_condition": false_condition,
        "skip_reason": "Conditional result was False",
        "skipped": True,
    }


class ContainerEngine:
    """Runs one play's tasks against one container."""

    def __init__(
        self,
        target: Target,
        run: ContainerRun,
        variables: dict[str, Any],
        options: RunOptions,
        on_result: Callable[[ContainerRun, TaskResult], None] = lambda run, result: None,
        stop: threading.Event | None = None,
        flow: PlayFlow | None = None,
        gather_facts: bool = False,
    ) -> None:
        self.flow = flow or PlayFlow([run.key])
        self.once_seen: dict[str, int] = {}  # run_once tasks reached, by location
        self.failed_task: Any = None
        self.handling = 0  # rescues/always running for this container's own failure
        self.target = target
        self.run = run
        self.vars = variables
        if variables.get("hostvars") is not None:  # its own entry shows what tasks set here
            variables["hostvars"] = _OwnHostVars(variables["hostvars"], self)
        self.options = options
        self.on_result = on_result
        self.facts: dict[str, tuple[str, Fact]] | None = None
        self.ahead: list = []  # the tasks still to come whose facts one probe may read
        self.prepared: dict[int, tuple[tuple, tuple, Any]] = {}  # by task, see _args
        self.snippets: dict[int, tuple[Any, Any, bool, str | None]] = {}  # see _snippet
        self.runtime: set[str] = set()  # registered and set_fact names: over task vars
        self.fact_names: set[str] = set()  # gathered (here or in an earlier play)
        self.default_names: set[str] = set()  # set by an included role's defaults
        self.roles_run: set[tuple] = set()  # roles a task of which ran here (_role_ident)
        self.set_names: set[str] = set()  # by set_fact or register: over include_vars
        self.in_role_include = 0  # running the tasks an include_role brought in
        self.names: dict[int, str] = {}  # each task's name as shown, by id(task)
        self.notified: list[str] = []
        self.deferred: set[int] = set()  # handlers notified in a flush after they ran
        self.stop = stop or threading.Event()
        self.lock = RunLock(target, options.run_id, options.lock_lease, options.lock_wait)
        self.pending_extras = {key: make(variables) for key, make in options.extra_probes.items()}
        self.controller = Controller()  # where delegated tasks run
        self.gather_facts = gather_facts
        if gather_facts:  # read with the first probe; forced early only by a task reading them
            self.pending_extras[gathered.KEY] = gathered.snippet()

    # -- the play ---------------------------------------------------------

    def play(self, tasks: list, handlers: list) -> None:
        """Run tasks, then notified handlers; record transport failures as statuses."""
        started = time.monotonic()
        self.run.started_at = self.run.started_at or time.time()  # the first play's start
        self.handlers = list(handlers)  # an include_role reached adds its role's
        self.flow.enter(self.run.key)
        self.options.observer.container_started(self.run)
        try:
            self._run_list(tasks, handler=False, at=(0,))
            # Ansible's last flush is a task tagged `always`: --skip-tags always skips it.
            if should_run({"always"}, self.options.tags, self.options.skip_tags):
                self._flush_handlers(top=True, at=(1,))
                if self.deferred:  # notified by a handler listed after them: ansible-core's
                    self._flush_handlers(top=True, at=(2,))  # flush after post_tasks
            self.pending_extras.pop(gathered.KEY, None)  # no task read them: no call for them
            if self.pending_extras:
                self._probe([], first=None)
        except TransportError as exc:
            if isinstance(exc, CommandTimeout):
                # The command may still run in the container: its lock must outlive it,
                # so it is not released; the script renews the lease when it ends.
                self.lock.held = False
            hint = f" ({exc.hint})" if exc.hint else ""
            self.run.status, self.run.message = exc.status, exc.message + hint
        except FailedWithBatch as exc:
            self.run.message = f"play ended: {exc}"
        except TaskFailed as exc:
            self.run.status, self.run.message = "failed", str(exc)
            self.failed_task = exc.task
        except PlayEnded as exc:  # not a failure: the play ends here for this container
            self.run.message = str(exc)
        except Interrupted:
            self.run.status, self.run.message = "interrupted", "stopped before the next task"
        except InputError as exc:  # a value only known at run time was wrong
            self.run.status, self.run.message = "failed", redact(str(exc), self.vars)
        except LockTimeout as exc:
            self.run.status, self.run.message = "failed", f"gave up waiting: {exc}"
        finally:
            self._release()
            if self.run.status not in ("ok", "changed", "interrupted"):
                self.flow.failed(self.run.key, self.failed_task)
            self.flow.leave(self.run.key)
            self.run.remote_calls = self.target.calls
            self.run.remote_reruns = self.target.reruns
            self.run.local_calls = self.controller.calls
            self.run.duration += time.monotonic() - started
            self.run.finished_at = time.time()
            self.options.observer.container_finished(self.run)

    def _release(self) -> None:
        """Best effort: a lock we cannot release expires with its lease."""
        with contextlib.suppress(TransportError):
            self.lock.release()

    def _notified(self) -> list[int]:
        """The places of the handlers the notifications call, as ansible-core finds them:
        by name the one loaded last (a role's by "role : name" or its name alone); by
        `listen` topic every listener, the last loaded of each name (a role's
        without "role : ")."""
        chosen: set[int] = set()
        for note in self.notified:
            places = range(len(self.handlers) - 1, -1, -1)  # last loaded first
            named = next((n for n in places if note in _names(self.handlers[n])), None)
            if named is not None:
                chosen.add(named)
            listeners: set[str] = set()
            for n in places:
                handler = self.handlers[n]
                plain = handler.name.split(" : ", 1)[-1] if handler.role else handler.name
                if note in getattr(handler, "listen", ()) and plain not in listeners:
                    listeners.add(plain)
                    chosen.add(n)
        return sorted(chosen | self.deferred)

    def _run_list(
        self,
        tasks: list,
        handler: bool,
        top: bool = True,
        at: tuple[int, ...] = (),
        numbers: list[int] | None = None,
        size: int | None = None,
        pairs: Iterable[tuple[int, Any]] | None = None,
    ) -> None:
        """Run `tasks`, the items at `at` + (number,) in the play (PlayFlow.step):
        numbers are their indices in `tasks` unless given (then `size` is the length
        of the list they index, whose end is the list's last point); `pairs`, when
        given, yields (number, task) as they are run, instead of them."""
        if top:
            self.ahead = _lookahead(tasks)
        if pairs is None:
            pairs = zip(numbers or range(len(tasks)), tasks, strict=False)
        for number, task in pairs:
            here = (*at, number)
            self._step(here, f" before task '{task.name}'")
            if isinstance(task, Block):
                self._run_block(task, handler, here)
                continue
            if task.module == "meta":
                self._meta(task, here)
                continue
            remaining = self._remaining(task)
            # Its name as ansible-core shows it: rendered as the task starts.
            self.names[id(task)] = self._shown_name(task)
            self.options.observer.task_started(self.run, self.names[id(task)])
            self._gather_for(task, remaining)
            if task.run_once and task.include is None:
                result = self._once(task, remaining, handler)
                if result is None:  # another container ran it; its outcome applied here
                    continue
            else:
                result = self._run_task(task, remaining, handler)
            if task.role and not self.in_role_include:  # see _ran_before
                self.roles_run.add(_role_ident(task.role, task.params))
            # Marked before it is reported: the journal and the live output say "ignored" too.
            result.ignored = result.status == "failed" and bool(
                self._keyword(task, "ignore_errors")
            )
            self.run.tasks.append(result)
            self.on_result(self.run, result)
            if result.status == "failed" and not result.ignored:
                self.flow.task_failed(self.run.key, task, here)
                raise TaskFailed(f"task '{task.name}' failed: {_why(result)}", task, result)
            if task.include is not None and result.status != "skipped":
                self._run_include(task, remaining[1:], handler, here)
        if self.flow.lockstep:  # the list's end is a point of the play too
            self._step((*at, len(tasks) if size is None else size), "")

    def _step(self, here: tuple[int, ...], before: str) -> None:
        """Reach the item at `here` (in step: with the batch), then stop, end or fail
        here if the run or the batch says so (`before`: the task there, "" at a
        list's end, where an interrupted run has nothing left to stop)."""
        self.flow.step(self.run.key, here, self.stop)
        if before and self.stop.is_set():
            raise Interrupted()
        if why := self.flow.stops_before(here):
            raise PlayEnded(f"play ended{before}: {why}")
        if why := self.flow.fails_with(self.run.key, here, self.handling > 0):
            raise FailedWithBatch(why)

    def _flush_handlers(self, at: tuple[int, ...], top: bool = False) -> None:
        """Run the notified handlers now, in the order they are listed; a later
        notification runs them again. A handler a running handler notifies runs in
        this flush when it is listed after it, else at the next flush, as in
        ansible-core. A handler's number is its place among the play's handlers, as
        every container that runs it runs it at the same point."""
        flush = _HandlerPass(self._notified())
        self.notified, self.deferred = [], set()
        self.facts = None
        wanted = [self.handlers[n] for n in flush.pending]
        try:
            self._run_list(
                wanted, handler=True, top=top, at=at, size=len(self.handlers),
                pairs=flush.pairs(self),
            )  # fmt: skip
        except TaskFailed:
            # Those after a failed handler stay notified, as in Ansible: with
            # force_handlers the section's own flush (its block's `always`) runs them.
            self.deferred |= flush.left(self)
            raise
        self.deferred |= flush.left(self)

    def _meta(self, task: Any, here: tuple[int, ...]) -> None:
        started = time.monotonic()
        action = task.args["free_form"]
        if action in ("end_play", "end_batch") and self.flow.lockstep:
            holds, runner = self._meta_once(task)
        else:
            holds, runner = self._holds(task), self.run.key
        if not holds:
            if runner == self.run.key:  # as Ansible: a skip, for the one that read the `when`
                result = self._result(task, "skipped", "condition false", False, started)
                self.run.tasks.append(result)
                self.on_result(self.run, result)
            return
        if action == "flush_handlers":
            self._flush_handlers(here)
        elif action.startswith("end_"):
            why = f"meta: {action} in {runner} at {task.loc}"
            if action != "end_host":
                self.flow.end(why, play=action == "end_play", at=here)
            raise PlayEnded(why)

    def _holds(self, task: Any) -> bool:
        where = f"{task.loc}: task '{task.name}'"
        return not task.when or condition(task.when, self._scope(task), where=where)

    def _meta_once(self, task: Any) -> tuple[bool, str]:
        """end_play and end_batch bypass Ansible's host loop: their `when` is read for
        the first container of the batch that reaches them (as for run_once), and
        what it says holds for every container. (whether it holds, who read it)"""
        seen = self.once_seen[task.loc] = self.once_seen.get(task.loc, 0) + 1
        key = ("meta", task.loc, seen)
        outcome = self.flow.claim(key, self.run.key)
        if outcome is not None:
            return outcome.status == "holds", outcome.runner
        holds = False
        try:
            holds = self._holds(task)
        finally:  # always: the others wait for it
            self.flow.publish(key, Outcome(self.run.key, "holds" if holds else "not", ""))
        return holds, self.run.key

    def _once(self, task: Any, remaining: list, handler: bool) -> TaskResult | None:
        """A run_once task: the claiming container runs it and hands its outcome (status,
        register, set_fact) to the others, which make no remote call for it."""
        seen = self.once_seen[task.loc] = self.once_seen.get(task.loc, 0) + 1
        key = (task.loc, seen)
        outcome = self.flow.claim(key, self.run.key)
        if outcome is None:
            return self._run_claimed(task, remaining, handler, key)
        self._set_runtime(outcome.values)
        if task.module != "include_vars":
            self.set_names |= set(outcome.values)
        self.vars.update(self.options.extra_vars)
        if outcome.status == "failed" and not self._keyword(task, "ignore_errors"):
            msg = f"task '{task.name}' failed in {outcome.runner} (run_once)"
            failed = TaskResult(task.name, task.module, "failed", msg, loc=task.loc)
            failed.result = dict(outcome.values.get(task.register) or {})
            raise TaskFailed(msg, task, failed)  # not reported here; a rescue reads it
        return None

    def _run_claimed(self, task: Any, remaining: list, handler: bool, key: Any) -> TaskResult:
        before = dict(self.vars)
        outcome = Outcome(self.run.key, "failed", f"task '{task.name}' did not finish")
        try:
            result = self._run_task(task, remaining, handler)
            changed = {k: v for k, v in self.vars.items() if before.get(k, before) is not v}
            outcome = Outcome(self.run.key, result.status, result.msg, changed)
            return result
        finally:  # always: the others wait for it
            self.flow.publish(key, outcome)

    def _run_include(self, task: Any, after: list, handler: bool, here: tuple[int, ...]) -> None:
        """include_tasks/include_role reached: load what it names (once per loop item)
        and run it; its tasks' facts are read in one probe with those of the rest."""
        where = f"{task.loc}: task '{task.name}'"
        scopes = [(self._scope(task), {})]
        if task.loop is not None:
            scope = self._scope(task)
            items = loop_items(task.loop, scope, self.options.base_dir, where, task.module)
            scopes = []
            for index in range(len(items)):
                item = loop_vars(task.loop, index, items)
                scope = self._scope(task, item)
                if not task.when or condition(task.when, scope, where=where):
                    scopes.append((scope, item))
        for number, (scope, item) in enumerate(scopes):
            args = render(dict(task.args), scope, where=where)
            if _ran_before(task, args, self.roles_run):
                continue
            nodes, handlers, role = expand_include(task, args, item)
            if role is not None and as_bool(args.get("public")):
                self._publish(role.defaults, role.exports)
            known = {h.name for h in self.handlers}
            self.handlers += [h for h in handlers if h.name not in known]
            nodes = select_tasks(nodes, self.options.tags, self.options.skip_tags)
            self.ahead = [*_lookahead(nodes), *after]
            self.facts = None
            if task.module == "include_role":  # its tasks ran as this role, with its vars
                self.roles_run.add(_role_ident(_role_name(args), _include_vars(task)))
                self.in_role_include += 1
            try:
                self._run_list(nodes, handler, top=False, at=(*here, number))
            finally:
                self.in_role_include -= task.module == "include_role"

    def _publish(self, defaults: dict, exports: dict) -> None:
        """A public include_role's defaults and vars/ for the rest of the play: its
        defaults under every other level (a later role's win), its vars/ over the
        play's but under registered results, set_fact, include_vars and -e."""
        for name, value in defaults.items():
            later_role = name in self.default_names and name not in self.runtime
            if name not in self.vars or later_role:
                self.vars[name] = value
                self.default_names.add(name)
        for name, value in exports.items():
            if name not in self.runtime and name not in self.options.extra_vars:
                self.vars[name] = value
                self.default_names.discard(name)

    def _remaining(self, task: Any) -> list:
        index = next((i for i, t in enumerate(self.ahead) if t is task), None)
        return [task] if index is None else self.ahead[index:]

    def _run_block(self, block: Block, handler: bool, here: tuple[int, ...]) -> None:
        """Ansible's block: a failure runs `rescue` (the failure is then rescued);
        `always` runs either way; a failure not rescued goes on after `always`."""
        failure: TaskFailed | None = None
        try:
            self._run_list(block.block, handler, top=False, at=(*here, 0))
        except TaskFailed as exc:
            failure = exc
            if block.rescue and (exc.result is not None or isinstance(exc, FailedWithBatch)):
                if exc.result is not None:  # failed with the batch: no failed task of its own
                    exc.result.rescued = True
                    self._set_runtime(_failed_vars(exc.task, exc.result))
                try:
                    with self._handling(exc):
                        self._run_list(block.rescue, handler, top=False, at=(*here, 1))
                    failure = None
                except TaskFailed as again:
                    failure = again
        with self._handling(failure):
            self._run_list(block.always, handler, top=False, at=(*here, 2))
        if failure is not None:
            raise failure

    @contextlib.contextmanager
    def _handling(self, failure: TaskFailed | None) -> Iterator[None]:
        """While a rescue or always runs for this container's own failure, a failure
        under any_errors_fatal elsewhere is left to it (as Ansible spares a host in
        those states)."""
        own = failure is not None and not isinstance(failure, FailedWithBatch)
        self.handling += own
        try:
            yield
        finally:
            self.handling -= own

    def _set_runtime(self, values: dict[str, Any]) -> None:
        self.vars.update(values)
        self.runtime.update(values)

    def _scope(self, task: Any, loop: dict | None = None) -> dict[str, Any]:
        """The task's variables: its (and its blocks') `vars` over the play's, under
        registered results, set_fact and -e, as in Ansible; the loop's on top."""
        own = getattr(task, "defaults", None)
        if not task.vars and not loop and not getattr(task, "params", None) and not own:
            return self.vars
        scope = dict(self.vars)
        for name, value in (own or {}).items():  # its role's defaults: over other roles'
            if name not in self.vars or name in self.default_names:
                scope[name] = value
        scope.update(task.vars)
        scope.update({k: self.vars[k] for k in self.runtime if k in self.vars})
        scope.update(getattr(task, "params", {}))  # role params: over set_fact, as in Ansible
        scope.update({k: self.vars[k] for k in self.options.extra_vars if k in self.vars})
        return {**scope, **(loop or {})}

    # -- one task ---------------------------------------------------------

    def _run_task(self, task: Any, remaining: list, handler: bool) -> TaskResult:
        with warnings_kept() as warned:
            result = self._guarded_outcome(task, remaining, handler)
        if warned:
            result.details = {**result.details, "warnings": [redact(w, self.vars) for w in warned]}
        return result

    def _guarded_outcome(self, task: Any, remaining: list, handler: bool) -> TaskResult:
        started = time.monotonic()
        try:
            return self._task_outcome(task, remaining, handler, started)
        except InputError as exc:  # known only now (a lookup, a result): as ansible-core,
            # the task fails, and ignore_errors, rescue and register hold.
            msg = redact(str(exc), self.vars)
            registered = {"changed": False, "failed": True, "msg": msg}
            scope = self._scope(task)
            return self._finish(task, Plan(False, msg=msg), "failed", registered, handler,
                                started, scope, after=False)  # fmt: skip

    def _task_outcome(self, task: Any, remaining: list, handler: bool, started: float):
        where = f"{task.loc}: task '{task.name}'"
        if task.loop is not None:
            return self._run_loop(task, remaining, handler, started, where)
        scope = self._scope(task)
        false = first_false(task.when, scope, where=where) if task.when else HOLDS
        if false is not HOLDS:  # registered too, as ansible-core registers a skip
            if task.register:
                self._set_runtime({task.register: _skipped(false)})
                self.set_names.add(task.register)
            return self._result(task, "skipped", "condition false", handler, started)
        called = self._notes(task, scope, where)
        plan, status, registered = self._attempts(task, scope, f"t{id(task)}", remaining, where)
        return self._finish(task, plan, status, registered, handler, started, scope, called)

    def _attempts(
        self, task: Any, scope: dict, key: str, remaining: list, where: str
    ) -> tuple[Plan, str, dict]:
        """Plan, apply and judge the task (one item of a loop), retried `until` it holds."""
        module = REGISTRY[task.module]
        args = self._args(task, where, scope)
        # As ansible-core: `retries` (3 by default with `until`) runs the task again until
        # `until` holds (without `until`: until it does not fail).
        attempts = 1 + max(0, int(task.retries or 0))
        for attempt in range(1, attempts + 1):
            plan = self._plan(module, key, args, remaining, task)
            try:
                status, registered = self._apply(module, task, args, plan, scope)
            except Replan:
                self.facts = None
                plan = self._plan(module, key, args, remaining, task)
                status, registered = self._apply(module, task, args, plan, scope)
            registered = unsafe(registered)  # what the container said is data, not a template
            if attempts > 1:
                registered["attempts"] = attempt  # early: changed_when/failed_when read it
            status = self._judge(task, status, registered, where, scope)
            if attempts == 1 or self._retry_done(task, status, registered, where, scope):
                break
            if attempt < attempts:
                time.sleep(float(task.delay or 0))
                self.facts = None
        else:  # out of attempts: registered as ansible-core registers it
            registered["attempts"], registered["failed"] = attempts - 1, True
            status = "failed"
        return plan, status, registered

    def _run_loop(
        self, task: Any, remaining: list, handler: bool, started: float, where: str
    ) -> TaskResult:
        items = loop_items(task.loop, self._scope(task), self.options.base_dir, where, task.module)
        results: list[dict] = []
        shown: list[dict] = []
        called: list[str] = []
        for index in range(len(items)):
            if self.stop.is_set():
                raise Interrupted()
            if index and task.loop.pause:
                time.sleep(task.loop.pause)
            scope = self._scope(task, loop_vars(task.loop, index, items))
            notes = self._notes(task, scope, where)
            entry, said = self._loop_item(task, scope, f"t{id(task)}#{index}", remaining, where)
            results.append(entry)
            called += notes  # every item's, when the loop as a whole changed (ansible-core)
            shown.append(self._shown_item(task, entry, said, scope, where))
        registered = _loop_result(results)
        status = _loop_status(results)
        msg = registered.get("msg", "")
        failed = next((i for i in shown if i["status"] == "failed"), None)
        if failed is not None:
            msg = f"{msg} (item={failed['item']}: {failed['msg']})"
        scope = self._scope(task)
        plan = Plan(False, msg=msg)
        result = self._finish(
            task, plan, status, registered, handler, started, scope, called, after=False
        )
        no_log = self._keyword(task, "no_log")
        result.items, result.details = ([] if no_log else shown), {}
        result.msg = HIDDEN if no_log else redact(msg, scope)
        return result

    def _loop_item(
        self, task: Any, scope: dict, key: str, remaining: list, where: str
    ) -> tuple[dict, str]:
        """One item's registered result, as in the `results` of a looped register, and
        what it says (registered as `msg` where the module registers one)."""
        base = {k: v for k, v in scope.items() if k in _LOOP_NAMES or k == task.loop.loop_var}
        base["item"] = scope[task.loop.loop_var]
        if task.loop.index_var:
            base[task.loop.index_var] = scope[task.loop.index_var]
        false = first_false(task.when, scope, where=where) if task.when else HOLDS
        if false is not HOLDS:
            return {**_skipped(false), **base}, ""
        plan, status, registered = self._attempts(task, scope, key, remaining, where)
        self._after(task, registered)
        said = registered.get("msg") or plan.msg or ""
        if REGISTRY[task.module].registers_msg or status == "failed":
            registered["msg"] = said
        return {**registered, **base}, str(said)

    def _shown_item(self, task: Any, entry: dict, said: str, scope: dict, where: str) -> dict:
        """An item as output shows it: its `label` (or the item), status and message."""
        label = render(task.loop.label, scope, where=where) if task.loop.label else entry["item"]
        status = _loop_status([entry])
        return {
            "item": redact_data(label, scope),
            "status": status,
            "changed": status == "changed",
            "msg": redact(said, scope),
        }

    def _notes(self, task: Any, scope: dict, where: str) -> list[str]:
        """The handlers the task's `notify` calls in `scope` (templates rendered now)."""
        if not any(notify.templated(name) for name in task.notify):
            return task.notify
        return notify.notes(task.notify, scope, where)

    def _after(self, task: Any, registered: dict) -> None:
        """What the finished task does to the container's variables. As ansible-core's
        precedence has it, include_vars does not override a set_fact or register."""
        kept = {}
        if task.module == "include_vars":
            kept = {k: self.vars[k] for k in self.set_names if k in self.vars}
        REGISTRY[task.module].after(registered, self.vars)
        self.vars.update(kept)
        self._note_runtime(task, registered)
        if task.module == "set_fact":
            self.set_names |= set(registered.get("ansible_facts", {}))

    def _note_runtime(self, task: Any, registered: dict) -> None:
        """Names later tasks must see over their own `vars` (Ansible's precedence)."""
        self.runtime.update(registered.get("ansible_facts", {}))

    def _retry_done(
        self, task: Any, status: str, registered: dict, where: str, scope: dict
    ) -> bool:
        if not task.until:
            return status != "failed"
        return self._until(task, registered, where, scope)

    def _until(self, task: Any, registered: dict, where: str, variables: dict) -> bool:
        scope = {**variables, "result": registered}
        if task.register:
            scope[task.register] = registered
        return condition(task.until, scope, where=where)

    def _args(self, task: Any, where: str, scope: dict) -> Any:
        # A task's arguments rendered for the probe are rendered again when the task runs;
        # while no variable has been rebound since (same objects under the same names),
        # the result is the same: reuse it.
        seen = (tuple(scope), tuple(map(id, scope.values())))
        kept = self.prepared.get(id(task))
        if kept is not None and kept[0] == seen:
            return kept[2]
        args = task_args(task, scope, self.options.base_dir, where)
        self.prepared[id(task)] = (seen, tuple(scope.values()), args)  # alive: ids stay theirs
        return args

    def _snippet(self, module: Any, args: Any, diff: bool) -> str | None:
        # A task's probe snippet is made for the probe, then again when the task is
        # planned: the same module, the same arguments (this very object) and the same
        # diff mode make the same snippet.
        kept = self.snippets.get(id(args))
        if kept is not None and kept[0] is args and kept[1] is module and kept[2] == diff:
            return kept[3]
        snippet = module.probe(args, diff)
        self.snippets[id(args)] = (args, module, diff, snippet)  # alive: its id stays its own
        return snippet

    def _plan(self, module: Any, key: str, args: dict, remaining: list, task: Any) -> Plan:
        check, diff = self._modes(task)
        snippet = None if module.controller else self._snippet(module, args, diff)
        if snippet and delegated(task):  # read on this machine, never in the container's probe
            return module.decide(args, self.controller.fact(snippet), check)
        fact = self._fact_for(key, snippet, remaining) if snippet else None
        return module.decide(args, fact, check)

    # -- facts ------------------------------------------------------------

    def _fact_for(self, key: str, snippet: str, remaining: list) -> Fact:
        cached = (self.facts or {}).get(key)
        if cached is None or cached[0] != snippet:
            self._probe(remaining, first=(key, snippet))
        return self.facts[key][1]

    def _probe(self, remaining: list, first: tuple[str, str] | None) -> None:
        """Read facts for this task and every later one we can render now: one call."""
        snippets: dict[str, str] = {}
        for task in remaining:
            snippets.update(self._try_snippets(task))
        if first:
            snippets[first[0]] = first[1]
        extras, self.pending_extras = self.pending_extras, {}
        facts = probe.run_probe(self.target, {**snippets, **extras})
        self.facts = {key: (snippets[key], facts.get(key, Fact("", 1))) for key in snippets}
        for key in extras:
            output = facts.get(key, Fact("", 1)).output
            if key == gathered.KEY:
                self._set_gathered(output)
            else:
                self.run.extra_facts[key] = output

    def _gather_for(self, task: Any, remaining: list) -> None:
        """Facts not read yet and the task renders with them: read them now (with
        the facts of every later task that renders without them)."""
        if gathered.KEY in self.pending_extras and gathered.reads_facts(task, self._scope(task)):
            self._probe(remaining, first=None)

    def _set_gathered(self, output: str) -> None:
        self._set_facts(gathered.variables(gathered.parse(output)))

    def _set_facts(self, facts: dict[str, Any]) -> None:
        # Host facts: under play vars and -e, as in Ansible's precedence; facts an
        # earlier play gathered are gathered again.
        for name, value in facts.items():
            if name not in self.vars or name in self.fact_names:
                self.vars[name] = unsafe(value)
                self.fact_names.add(name)

    def carry_in(self, kept: HostState) -> None:
        """What earlier plays left for this container: its gathered facts (under play
        vars), its registered results and set_fact values (over them, under -e)."""
        self._set_facts(kept.facts)
        self._set_runtime(kept.runtime)  # kept from self.vars: -e already over them
        self.set_names |= kept.set_names
        if kept.facts_owed:  # gathered when a task of this play reads them
            self.gather_facts = True
            self.pending_extras[gathered.KEY] = gathered.snippet()

    def carry_out(self, kept: HostState) -> None:
        """Keep what later plays see of this container (ansible-core keeps a host's
        facts and registered variables for the whole playbook run)."""
        kept.facts.update({k: self.vars[k] for k in self.fact_names if k in self.vars})
        kept.runtime.update({k: self.vars[k] for k in self.runtime if k in self.vars})
        kept.set_names |= self.set_names
        kept.facts_owed = self.gather_facts and not kept.facts

    def _try_snippets(self, task: Any) -> dict[str, str]:
        """The probe snippets of the task (of each loop item) whose args render now."""
        module = REGISTRY.get(task.module)
        if module is None or module.controller or delegated(task):
            return {}
        if calls_lookup(task, self._scope(task)):
            return {}  # a lookup runs when its task is reached, not ahead of it
        scopes = {f"t{id(task)}": self._scope(task)}
        if task.loop is not None:
            try:
                items = loop_items(
                    task.loop, self._scope(task), self.options.base_dir, task.loc, task.module
                )
            except Exception:  # noqa: BLE001 - loops over a later result: probed when reached
                return {}
            scopes = {
                f"t{id(task)}#{i}": self._scope(task, loop_vars(task.loop, i, items))
                for i in range(len(items))
            }
        if gathered.KEY in self.pending_extras:  # read with the facts: guess them
            scopes = {key: gathered.speculative(scope) for key, scope in scopes.items()}
        out = {}
        for key, scope in scopes.items():
            try:
                if task.when and not condition(task.when, scope, where=task.loc):
                    continue
                args = self._args(task, task.loc, scope)
                diff = self._modes(task)[1]  # a templated `diff` may read a later result too
            except Exception:  # noqa: BLE001 - depends on a later result: probe it when reached
                continue
            snippet = self._snippet(module, args, diff)
            if snippet:
                out[key] = snippet
        return out

    # -- applying ---------------------------------------------------------

    def _apply(
        self, module: Any, task: Any, args: dict, plan: Plan, scope: dict
    ) -> tuple[str, dict]:
        said = {"msg": plan.msg} if module.registers_msg or plan.failed else {}
        registered: dict[str, Any] = {
            "changed": plan.changed,
            "failed": plan.failed,
            **said,
            **plan.result,
        }
        if plan.failed:
            return "failed", registered
        if plan.skipped:  # what ansible-core registers for it: no msg
            return "skipped", {"changed": False, "skipped": True, "skipped_reason": plan.skipped}
        if not plan.changed:
            if not module.registers_output:
                return "ok", registered
            return "ok", {"rc": 0, "stdout": "", "stderr": "", **registered}  # a module's own win
        if self._modes(task)[0]:
            registered.update(module.checked(args, plan))
            return ("skipped" if plan.skip_in_check else "changed"), registered
        local = delegated(task)  # a change on this machine leaves the container's facts
        try:
            rc, out, err = self._execute(task, plan, scope)
        except ValidationFailed as exc:  # the file stays as it was (a backup may be new)
            self.facts = self.facts if local else None
            kind = next((p.validated_as for p in plan.pushes if p.validate), "copy")
            refused = failed_validation(kind, exc.rc, exc.stdout, exc.stderr)
            return "failed", {**registered, **refused}
        except TransferError as exc:
            self.facts = self.facts if local else None
            return "failed", {**registered, "failed": True, "msg": exc.message}
        self.facts = self.facts if local else None  # the change may alter what later tasks read
        registered.update(module.finish(args, plan, rc, out, err))
        if registered.get("failed"):
            return "failed", registered
        # A task run only to wait (wait_for) reports itself unchanged.
        return ("changed" if registered.get("changed", True) else "ok"), registered

    def _execute(self, task: Any, plan: Plan, scope: dict) -> tuple[int, str, str]:
        timeout = float(task.timeout) if task.timeout else None
        local = delegated(task)  # the run lock guards the container, not this machine
        target = self.controller.target if local else self.target
        if not local and not self.lock.held and self.lock.acquire():
            raise Replan()  # we waited for another run: what we read may be stale
        for item in plan.pushes:
            push(
                target,
                item.content,
                item.dest,
                mode=item.mode,
                owner=item.owner,
                timeout=timeout,
                validate=item.validate,
            )
        if plan.script is None:
            return 0, "", ""
        where = f"{task.loc}: task '{task.name}'"
        environment = _environment(task.environment, scope, where)
        env = "".join(f"export {k}={q(v)}\n" for k, v in environment.items())
        script = env + plan.script if local else self.lock.wrap(env + plan.script)
        # -v: output as it arrives, redacted like the result; nothing of a no_log task.
        hide = lambda text: redact(_before(text, plan.trailer), scope)  # noqa: E731
        out, err = (
            (None, None)
            if self._keyword(task, "no_log")
            else self.options.observer.streams(self.run, hide)
        )
        argv = ["/bin/sh", "-c", script, "pctfleet-task"]
        result = target.run(argv, stdin=plan.stdin, timeout=timeout, stdout=out, stderr=err)
        if out is not None and err is not None:
            result.stdout, result.stderr = out.getvalue(), err.getvalue()
        if not local and busy(result):  # another run took the lock over while we paused: stop here
            raise TaskFailed(holder(result))
        return result.exit_code, _text(result.stdout), _text(result.stderr)

    def _judge(self, task: Any, status: str, registered: dict, where: str, variables: dict) -> str:
        """changed_when, then failed_when, as ansible-core reads them (both, unless the
        task was skipped): a command that ran is changed whatever its rc, failed or not,
        unless changed_when says otherwise."""
        scope = {**variables, "result": registered}
        if task.register:
            scope[task.register] = registered
        ran = "rc" in registered and REGISTRY[task.module].changed_when_failed
        ran = ran and registered.get("changed") is not False  # it could not start
        changed = status == "changed" or (status == "failed" and ran)
        failed = status == "failed"
        if status != "skipped":
            try:
                if task.changed_when is not None:
                    changed = condition(task.changed_when, scope, where=where)
                if task.failed_when is not None:
                    failed = condition(task.failed_when, scope, where=where)
            except InputError as exc:  # as in Ansible: the task fails, ignore_errors holds
                failed, registered["msg"] = True, str(exc)
            status = "failed" if failed else ("changed" if changed else "ok")
        registered["changed"], registered["failed"] = changed, status == "failed"
        return status

    def _finish(
        self,
        task: Any,
        plan: Plan,
        status: str,
        registered: dict,
        handler: bool,
        started: float,
        scope: dict,
        called: list[str] | None = None,
        after: bool = True,
    ) -> TaskResult:
        if task.register:
            self._set_runtime({task.register: registered})
            self.set_names.add(task.register)
        if after:  # a loop applied each item's facts already
            self._after(task, registered)
        self.vars.update(self.options.extra_vars)  # -e wins over register and set_fact too
        called = task.notify if called is None else called
        rendered = called is not task.notify  # a written name was checked when read
        why = None
        if status == "changed" and rendered:
            why = notify.unknown(called, notify.topics(self.handlers))
        if why:
            status, registered["failed"], registered["msg"] = "failed", True, why
        elif status == "changed":
            self.notified.extend(n for n in dict.fromkeys(called) if n not in self.notified)
        msg = registered.get("msg") or plan.msg or ""
        result = self._result(task, status, str(msg), handler, started)
        result.diff = plan.diff if (self._modes(task)[1] and plan.changed) else None
        result.result = {k: v for k, v in registered.items() if k != "ansible_facts"}
        result.details = {k: v for k, v in registered.items() if k not in _NOT_DETAILS}
        return self._redacted(task, result, scope)

    def _result(self, task: Any, status: str, msg: str, handler: bool, started: float):
        name, took = self.names.get(id(task)) or task.name, time.monotonic() - started
        return TaskResult(name, task.module, status, msg, None, took, task.loc, handler)

    def _shown_name(self, task: Any) -> str:
        """The task's name rendered with its variables as they are now, as ansible-core
        shows it; as written when that fails (a loop variable, a name not defined)."""
        if "{{" not in task.name and "{%" not in task.name:
            return task.name
        try:
            return str(render(task.name, self._scope(task), where=task.loc))
        except InputError:
            return task.name

    def _keyword(self, task: Any, key: str) -> Any:
        """The task's ignore_errors, no_log, check_mode or diff: as written, or its
        template rendered now with the task's variables, as ansible-core renders it."""
        value = getattr(task, key, None)
        if not isinstance(value, str):
            return value
        try:
            return as_bool(render(value, self._scope(task), where=task.loc))
        except InputError:
            if key == "no_log":  # not known: hidden rather than shown by mistake
                return True
            raise

    def _modes(self, task: Any) -> tuple[bool, bool]:
        """(check, diff) for this task: its own `check_mode`/`diff`, else the run's."""
        check, diff = self._keyword(task, "check_mode"), self._keyword(task, "diff")
        options = self.options
        return (options.check if check is None else check), (options.diff if diff is None else diff)

    def _redacted(self, task: Any, result: TaskResult, scope: dict | None = None) -> TaskResult:
        if self._keyword(task, "no_log"):
            # As ansible-core's censored result: the flags stay (the recap counts them).
            kept = {k: v for k, v in result.result.items() if k in ("changed", "failed")}
            result.msg, result.diff, result.result, result.details = HIDDEN, None, kept, {}
            return result
        hide = hider(self.vars if scope is None else scope)  # secrets found once per result
        result.msg = hide(result.msg)
        result.details = redact_data(result.details, hide)
        if result.diff:
            result.diff = {k: hide(str(v)) for k, v in result.diff.items()}
        if result.status == "failed":
            result.failure = failure_output(result.result, hide)
        return result


_LOOP_NAMES = frozenset({"ansible_loop_var", "ansible_index_var", "ansible_loop"})


def _names(handler: Any) -> frozenset[str]:
    """What a notify may call a handler (a block among the handlers: its name)."""
    return getattr(handler, "names", None) or frozenset({handler.name})


def _lookahead(tasks: list) -> list:
    """Tasks in the order they run when nothing fails: blocks and their `always`
    (a `rescue` runs only after a failure; its tasks are probed when reached)."""
    out: list = []
    for task in tasks:
        out += _lookahead([*task.block, *task.always]) if isinstance(task, Block) else [task]
    return out


def _environment(layers: tuple, scope: dict, where: str) -> dict[str, Any]:
    """A task's environment: its layers rendered, later ones over earlier ones; a name
    whose value is `omit` is not exported, as in Ansible."""
    out: dict[str, Any] = {}
    for layer in layers:
        rendered = render(layer, scope, where=where)
        if not isinstance(rendered, Mapping):
            raise InputError(f"{where}: 'environment' must be a mapping, got {brief(rendered)}")
        bad = [name for name in rendered if not VAR_NAME_RE.match(str(name))]
        if bad:
            raise InputError(f"{where}: {brief(bad[0])} is not a valid name in 'environment'")
        out.update(rendered)
    return {name: value for name, value in out.items() if value != OMIT}


def _failed_vars(task: Any, result: TaskResult) -> dict[str, Any]:
    """What a `rescue` reads about the task that failed, as Ansible names it."""
    # Its name as shown (rendered as it started) and its arguments as written: data from
    # then on, never rendered again (a loop's `{{ item }}` means nothing in a rescue).
    failed_task = unsafe({"name": result.name, "action": task.module, "args": dict(task.args)})
    return {"ansible_failed_task": failed_task, "ansible_failed_result": result.result}


def _loop_result(results: list[dict]) -> dict[str, Any]:
    """A looped task's registered value, as Ansible builds it from its items."""
    if not results:
        return {
            "results": [],
            "changed": False,
            "skipped": True,
            "skipped_reason": "No items in the list",
        }
    out: dict[str, Any] = {"results": results, "changed": any(r.get("changed") for r in results)}
    out["skipped"] = all(r.get("skipped") for r in results)
    if any(r.get("failed") for r in results):
        out.update(failed=True, msg="One or more items failed")
    else:
        out["msg"] = "All items skipped" if out["skipped"] else "All items completed"
    return out


def _loop_status(results: list[dict]) -> str:
    if any(r.get("failed") for r in results):
        return "failed"
    if any(r.get("changed") for r in results):
        return "changed"
    return "skipped" if all(r.get("skipped") for r in results) else "ok"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _before(text: str, trailer: str) -> str:
    """A line of output as shown: without a script's `trailer` and what follows it."""
    return text.split(trailer, 1)[0] if trailer else text


def _why(result: TaskResult) -> str:
    """A failed task's message for the container's line; ansible-core's bare "non-zero
    return code" gets the code and the last line the command printed."""
    failure = result.failure or {}
    if result.msg != "non-zero return code" or failure.get("rc") is None:
        return result.msg
    said = (failure.get("stderr") or failure.get("stdout") or "").strip().splitlines()
    return f"{result.msg} (rc {failure['rc']})" + (f": {said[-1]}" if said else "")


_MAGIC_PARAMS = frozenset({"role_path", "role_name"})


def _role_ident(role: str, params: dict) -> tuple:
    """A role as ansible-core tells its runs apart: its name and its params."""
    shown = sorted((k, repr(v)) for k, v in params.items() if k not in _MAGIC_PARAMS)
    return role, tuple(shown)


def _ran_before(task: Any, args: dict, roles_run: set) -> bool:
    """An include_role with `allow_duplicates: false` whose role already ran here with
    the same params and include vars (from roles:, an import or an include), which
    ansible-core passes by."""
    if task.module != "include_role" or as_bool(args.get("allow_duplicates", True)):
        return False
    return _role_ident(_role_name(args), _include_vars(task)) in roles_run


def _role_name(args: dict) -> str:
    return str(args["name"]).rsplit("/", 1)[-1]


def _include_vars(task: Any) -> dict:
    """An include_role's own `vars:` (they tell its runs apart, as role params do)."""
    return dict(task.vars)


class _OwnHostVars:
    """`hostvars` as this container's tasks see it: its own entry also holds what
    they registered, set (set_fact, include_vars) and gathered, as ansible-core's
    does. Other hosts' entries hold their inventory variables."""

    def __init__(self, hostvars: Any, engine: ContainerEngine) -> None:
        self._hostvars = hostvars
        self._engine = engine

    def __getitem__(self, name: str) -> Any:
        found = self._hostvars[name]
        engine = self._engine
        if name != engine.vars.get("inventory_hostname"):
            return found
        names = engine.runtime | engine.fact_names
        return HostEntry({**found.raw, **{k: engine.vars[k] for k in names if k in engine.vars}})

    def __contains__(self, name: object) -> bool:
        return name in self._hostvars

    def __iter__(self) -> Iterator[str]:
        return iter(self._hostvars)

    def __len__(self) -> int:
        return len(self._hostvars)

    def keys(self) -> list[str]:
        return list(self._hostvars.keys())

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._hostvars else default
