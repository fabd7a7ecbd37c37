"""Rollout's default health gate: what the rolled-out playbook manages, nothing else.

Every batch must be converged: a check-mode pass of the playbook over it finds
nothing to change. A playbook that deploys parts of the GPU serving stack also
gets those parts' `verify` checks (see `pctfleet.infra`); one that deploys none
of them gets only the converged check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pctfleet.modules import known_args
from pctfleet.playbook.loader import leaves, load_playbook
from pctfleet.run.journal import new_run_id
from pctfleet.run.playbookrun import RunRequest, execute, prepare
from pctfleet.verify import SETTINGS

Verdicts = dict[str, tuple[bool, str]]
Gate = Callable[[list], Verdicts]

# The verify checks that prove what a module deploys.
MODULE_CHECKS: dict[str, tuple[str, ...]] = {
    "cuda_toolchain": ("test_toolchain_matched",),
    "cuda_links": ("test_links_resolve",),
    "cccl_overlay": ("test_cccl_overlay_matches_manifest",),
    "flashinfer_cache": ("test_jit_cache_not_stale",),
    "server": ("test_server_pid_alive", "test_server_port_listens", "test_server_health_200"),
}


def stack_checks(playbook: Any) -> list[str]:
    """The verify checks of the stack parts `playbook` (a loaded Playbook) deploys."""
    checks: dict[str, None] = {}
    for play in playbook.plays:
        for task in [*leaves(play.tasks), *play.handlers]:
            if task.module == "server" and not _is_stack_server(task.args):
                continue  # some other program: the server checks judge only the stack's
            checks.update(dict.fromkeys(MODULE_CHECKS.get(task.module, ())))
    return list(checks)


def _is_stack_server(args: dict) -> bool:
    """A server whose PID file is the one verify checks (its `server_pidfile` setting)."""
    pidfile = str(args.get("pidfile", ""))
    return "server_pidfile" in pidfile or pidfile == SETTINGS["server_pidfile"]


def converged(plan: Any) -> Gate:
    """Passes a container when a check-mode run of `plan`'s playbook would change nothing."""

    def gate(containers: list) -> Verdicts:
        options = replace(plan.options, check=True, diff=False, run_id=new_run_id())
        request = RunRequest(
            plan.playbook, plan.inventory, containers, plan.connect, options, plan.forks
        )
        return {run.key: _converged_verdict(run) for run in execute(prepare(request))}

    return gate


def _converged_verdict(run: Any) -> tuple[bool, str]:
    if run.status == "ok":
        return True, ""
    if run.status == "changed":
        pending = [t.name for t in run.tasks if t.changed]
        return False, "not converged: would change " + ", ".join(f"'{n}'" for n in pending)
    return False, f"converged check {run.status}: {run.message}"


def default_gate(plan: Any, verify: Callable[[str], Gate]) -> Gate:
    """Converged, plus `verify(keyword)` for the stack checks the playbook calls for."""
    checks = stack_checks(load_playbook(plan.playbook, known_args()))
    gates = [converged(plan)] + ([verify(" or ".join(checks))] if checks else [])
    return lambda containers: combine([gate(containers) for gate in gates])


def combine(all_verdicts: list[Verdicts]) -> Verdicts:
    """A container passes when it passes every gate; the reasons of those it fails."""
    combined: Verdicts = {}
    for verdicts in all_verdicts:
        for key, (ok, why) in verdicts.items():
            was_ok, reasons = combined.get(key, (True, ""))
            reason = "; ".join(r for r in (reasons, "" if ok else why) if r)
            combined[key] = (was_ok and ok, reason)
    return combined
