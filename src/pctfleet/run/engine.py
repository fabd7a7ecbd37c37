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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pctfleet.errors import InputError
from pctfleet.facts import script as probe
from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact, Plan, q
from pctfleet.playbook.templating import condition, redact, redact_data, render, unsafe
from pctfleet.run.journal import new_run_id
from pctfleet.run.lock import LockTimeout, RunLock, busy, holder
from pctfleet.run.results import ContainerRun, TaskResult
from pctfleet.transport.base import CommandTimeout, Target, TransferError, TransportError
from pctfleet.transport.files import push

HIDDEN = "output hidden (no_log: true)"

# What every task registers; the rest of a registered result is the module's own report.
_NOT_DETAILS = frozenset(
    {"changed", "failed", "msg", "rc", "stdout", "stderr", "stdout_lines", "ansible_facts"}
    | {"log_tail"}  # the stderr of a failed server launch, already in msg
)


@dataclass
class RunOptions:
    check: bool = False
    diff: bool = False
    tags: set[str] | None = None
    skip_tags: set[str] | None = None
    extra_vars: dict[str, Any] = field(default_factory=dict)
    base_dir: str = "."
    # More snippets for the first probe (audit's fingerprint): key -> f(vars) -> sh.
    extra_probes: dict[str, Callable[[dict], str]] = field(default_factory=dict)
    run_id: str = field(default_factory=new_run_id)
    lock_lease: float = 60.0
    lock_wait: float = 300.0


class Interrupted(Exception):
    """The operator asked to stop: no new task starts."""


class Replan(Exception):
    """Facts may be stale (we waited for another run): read them again, decide again."""


class TaskFailed(Exception):
    """This container's run stops here (a task failed and ignore_errors is off)."""


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
    ) -> None:
        self.target = target
        self.run = run
        self.vars = variables
        self.options = options
        self.on_result = on_result
        self.facts: dict[str, tuple[str, Fact]] | None = None
        self.notified: list[str] = []
        self.stop = stop or threading.Event()
        self.lock = RunLock(target, options.run_id, options.lock_lease, options.lock_wait)
        self.pending_extras = {key: make(variables) for key, make in options.extra_probes.items()}

    # -- the play ---------------------------------------------------------

    def play(self, tasks: list, handlers: list) -> None:
        """Run tasks, then notified handlers; record transport failures as statuses."""
        started = time.monotonic()
        self.run.started_at = self.run.started_at or time.time()  # the first play's start
        try:
            self._run_list(tasks, handler=False)
            wanted = [h for h in handlers if self._is_notified(h)]
            self.facts = None
            self._run_list(wanted, handler=True)
            if self.pending_extras:
                self._probe([None], first=None)
        except TransportError as exc:
            if isinstance(exc, CommandTimeout):
                # The command may still run in the container: its lock must outlive it,
                # so it is not released; the script renews the lease when it ends.
                self.lock.held = False
            hint = f" ({exc.hint})" if exc.hint else ""
            self.run.status, self.run.message = exc.status, exc.message + hint
        except TaskFailed as exc:
            self.run.status, self.run.message = "failed", str(exc)
        except Interrupted:
            self.run.status, self.run.message = "interrupted", "stopped before the next task"
        except InputError as exc:  # a value only known at run time was wrong
            self.run.status, self.run.message = "failed", redact(str(exc), self.vars)
        except LockTimeout as exc:
            self.run.status, self.run.message = "failed", f"gave up waiting: {exc}"
        finally:
            self._release()
            self.run.remote_calls = self.target.calls
            self.run.duration += time.monotonic() - started
            self.run.finished_at = time.time()

    def _release(self) -> None:
        """Best effort: a lock we cannot release expires with its lease."""
        with contextlib.suppress(TransportError):
            self.lock.release()

    def _is_notified(self, handler: Any) -> bool:
        names = {handler.name, *getattr(handler, "listen", [])}
        return any(name in names for name in self.notified)

    def _run_list(self, tasks: list, handler: bool) -> None:
        for index, task in enumerate(tasks):
            if self.stop.is_set():
                raise Interrupted()
            result = self._run_task(task, tasks[index:], handler)
            self.run.tasks.append(result)
            self.on_result(self.run, result)
            if result.status == "failed" and not task.ignore_errors:
                raise TaskFailed(f"task '{task.name}' failed: {result.msg}")

    # -- one task ---------------------------------------------------------

    def _run_task(self, task: Any, remaining: list, handler: bool) -> TaskResult:
        started = time.monotonic()
        where = f"{task.loc}: task '{task.name}'"
        if task.when and not condition(task.when, self.vars, where=where):
            return self._result(task, "skipped", "condition false", handler, started)
        module = REGISTRY[task.module]
        args = self._args(task, where)
        attempts = max(1, int(task.retries or 0) + 1) if task.until else 1
        for attempt in range(attempts):
            plan = self._plan(module, task, args, remaining)
            try:
                status, registered = self._apply(module, task, args, plan)
            except Replan:
                self.facts = None
                plan = self._plan(module, task, args, remaining)
                status, registered = self._apply(module, task, args, plan)
            registered = unsafe(registered)  # what the container said is data, not a template
            status = self._judge(task, status, registered, where)
            if not task.until or self._until(task, registered, where):
                break
            if attempt + 1 < attempts:
                time.sleep(float(task.delay or 0))
                self.facts = None
        else:
            status = "failed"
        return self._finish(task, plan, status, registered, handler, started)

    def _until(self, task: Any, registered: dict, where: str) -> bool:
        scope = {**self.vars, "result": registered}
        if task.register:
            scope[task.register] = registered
        return condition(task.until, scope, where=where)

    def _args(self, task: Any, where: str) -> Any:
        raw = render(dict(task.args), self.vars, where=where)
        return REGISTRY[task.module].prepare(raw, Context(self.options.base_dir, self.vars), where)

    def _plan(self, module: Any, task: Any, args: dict, remaining: list) -> Plan:
        snippet = None if module.controller else module.probe(args, self.options.diff)
        fact = self._fact_for(task, snippet, remaining) if snippet else None
        return module.decide(args, fact, self.options.check)

    # -- facts ------------------------------------------------------------

    def _fact_for(self, task: Any, snippet: str, remaining: list) -> Fact:
        key = f"t{id(task)}"
        cached = (self.facts or {}).get(key)
        if cached is None or cached[0] != snippet:
            self._probe(remaining, first=(key, snippet))
        return self.facts[key][1]

    def _probe(self, remaining: list, first: tuple[str, str] | None) -> None:
        """Read facts for this task and every later one we can render now: one call."""
        snippets = dict([first]) if first else {}
        for task in remaining[1:]:
            snippet = self._try_snippet(task)
            if snippet:
                snippets[f"t{id(task)}"] = snippet
        extras, self.pending_extras = self.pending_extras, {}
        facts = probe.run_probe(self.target, {**snippets, **extras})
        self.facts = {key: (snippets[key], facts.get(key, Fact("", 1))) for key in snippets}
        for key in extras:
            self.run.extra_facts[key] = facts.get(key, Fact("", 1)).output

    def _try_snippet(self, task: Any) -> str | None:
        """The task's probe snippet if its args render with what is known now."""
        module = REGISTRY.get(task.module)
        if module is None or module.controller:
            return None
        try:
            if task.when and not condition(task.when, self.vars, where=task.loc):
                return None
            args = self._args(task, task.loc)
        except Exception:  # noqa: BLE001 - depends on a later result: probe it when reached
            return None
        return module.probe(args, self.options.diff)

    # -- applying ---------------------------------------------------------

    def _apply(self, module: Any, task: Any, args: dict, plan: Plan) -> tuple[str, dict]:
        registered: dict[str, Any] = {
            "changed": plan.changed,
            "failed": plan.failed,
            "msg": plan.msg,
            **plan.result,
        }
        if plan.failed:
            return "failed", registered
        if not plan.changed:
            return "ok", {**registered, "rc": 0, "stdout": "", "stderr": ""}
        if self.options.check:
            return ("skipped" if plan.skip_in_check else "changed"), registered
        try:
            rc, out, err = self._execute(task, plan)
        except TransferError as exc:
            self.facts = None
            return "failed", {**registered, "failed": True, "msg": exc.message}
        self.facts = None  # the change may have altered what later tasks read
        registered.update(module.finish(args, plan, rc, out, err))
        if registered.get("failed"):
            return "failed", registered
        # A task run only to wait (wait_for) reports itself unchanged.
        return ("changed" if registered.get("changed", True) else "ok"), registered

    def _execute(self, task: Any, plan: Plan) -> tuple[int, str, str]:
        timeout = float(task.timeout) if task.timeout else None
        if not self.lock.held and self.lock.acquire():
            raise Replan()  # we waited for another run: what we read may be stale
        for item in plan.pushes:
            push(
                self.target,
                item.content,
                item.dest,
                mode=item.mode,
                owner=item.owner,
                timeout=timeout,
            )
        if plan.script is None:
            return 0, "", ""
        where = f"{task.loc}: task '{task.name}'"
        environment = render(dict(task.environment or {}), self.vars, where=where)
        env = "".join(f"export {k}={q(v)}\n" for k, v in environment.items())
        result = self.target.run(
            ["/bin/sh", "-c", self.lock.wrap(env + plan.script), "pctfleet-task"],
            stdin=plan.stdin,
            timeout=timeout,
        )
        if busy(result):  # another run took the lock over while we paused: stop here
            raise TaskFailed(holder(result))
        return result.exit_code, _text(result.stdout), _text(result.stderr)

    def _judge(self, task: Any, status: str, registered: dict, where: str) -> str:
        scope = {**self.vars, "result": registered}
        if task.register:
            scope[task.register] = registered
        if task.changed_when is not None and status in {"ok", "changed"}:
            status = "changed" if condition(task.changed_when, scope, where=where) else "ok"
        if task.failed_when is not None and status != "skipped":
            failed = condition(task.failed_when, scope, where=where)
            status = "failed" if failed else ("ok" if status == "failed" else status)
        registered["changed"], registered["failed"] = status == "changed", status == "failed"
        return status

    def _finish(
        self, task: Any, plan: Plan, status: str, registered: dict, handler: bool, started: float
    ) -> TaskResult:
        if task.register:
            self.vars[task.register] = registered
        REGISTRY[task.module].after(registered, self.vars)
        if status == "changed":
            self.notified.extend(n for n in task.notify if n not in self.notified)
        msg = registered.get("msg") or plan.msg or ""
        result = self._result(task, status, str(msg), handler, started)
        result.diff = plan.diff if (self.options.diff and plan.changed) else None
        result.result = {k: v for k, v in registered.items() if k != "ansible_facts"}
        result.details = {k: v for k, v in registered.items() if k not in _NOT_DETAILS}
        return self._redacted(task, result)

    def _result(self, task: Any, status: str, msg: str, handler: bool, started: float):
        return TaskResult(
            task.name, task.module, status, msg, None, time.monotonic() - started, task.loc, handler
        )

    def _redacted(self, task: Any, result: TaskResult) -> TaskResult:
        if task.no_log:
            result.msg, result.diff, result.result, result.details = HIDDEN, None, {}, {}
            return result
        result.msg = redact(result.msg, self.vars)
        result.details = redact_data(result.details, self.vars)
        if result.diff:
            result.diff = {k: redact(str(v), self.vars) for k, v in result.diff.items()}
        return result


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
