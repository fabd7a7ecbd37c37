"""Every command's statuses, and the one policy that turns them into an exit code."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from pctfleet import exitcodes


class Status(StrEnum):
    """A container's (or task's, or check's) outcome. A str: JSON and comparisons see the word."""

    OK = "ok"
    CHANGED = "changed"
    SKIPPED = "skipped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    UNREACHABLE = "unreachable"
    CT_MISSING = "ct-missing"
    CT_STOPPED = "ct-stopped"
    TIMEOUT = "timeout"
    ERROR = "error"
    PROBLEM = "problem"  # doctor: a rule failed
    CLEAN = "clean"  # audit: as the playbook and the baseline say
    DRIFT = "drift"  # audit: not as they say
    PASSED = "passed"  # verify: every check passed
    UNTOUCHED = "untouched"  # run: a later batch that never started (serial)


# A container we never got to judge (commands did not reach it, or did not
# finish): counted apart from failures everywhere.
UNREACHED = (Status.UNREACHABLE, Status.CT_MISSING, Status.CT_STOPPED, Status.TIMEOUT)
SUCCESS = (Status.OK, Status.CHANGED)


@dataclass
class ContainerOutcome:
    """One container's line in a command's report: which one, its status, and why."""

    container: str
    status: str
    message: str = ""


@dataclass(frozen=True)
class Rule:
    """`code` when any status is one of `any_of`, or any is outside `all_in`."""

    code: int
    any_of: frozenset[str] = frozenset()
    all_in: frozenset[str] | None = None

    def matches(self, statuses: set[str]) -> bool:
        if statuses & self.any_of:
            return True
        return self.all_in is not None and bool(statuses - self.all_in)


@dataclass(frozen=True)
class Policy:
    """The first rule that matches gives the code; none: 0. `empty`: no container at all.

    `own`: the command's own exit code wins when it has one (one command, one container).
    """

    rules: tuple[Rule, ...]
    empty: int = exitcodes.OK
    own: bool = False


def _rule(code: int, *any_of: str, all_in: Iterable[str] | None = None) -> Rule:
    return Rule(code, frozenset(any_of), None if all_in is None else frozenset(all_in))


_PLAYBOOK = Policy(
    (
        _rule(exitcodes.UNREACHABLE, *UNREACHED),
        _rule(exitcodes.INTERRUPTED, Status.INTERRUPTED),
        _rule(exitcodes.FAILED, Status.FAILED),
    )
)

# The per-command differences, as data (each command's --help states its codes).
POLICIES: dict[str, Policy] = {
    "run": _PLAYBOOK,
    "provision": _PLAYBOOK,
    # Only a node that could not be reached is 3; a missing or stopped container is 2.
    "exec": Policy(
        (
            _rule(exitcodes.UNREACHABLE, Status.UNREACHABLE),
            _rule(exitcodes.FAILED, all_in={Status.OK}),
        ),
        own=True,
    ),
    "doctor": Policy(
        (
            _rule(exitcodes.UNREACHABLE, all_in={Status.OK, Status.PROBLEM}),
            _rule(exitcodes.FAILED, Status.PROBLEM),
        )
    ),
    # An unreachable container is an error, never reported clean.
    "audit": Policy(
        (
            _rule(exitcodes.ERROR, all_in={Status.CLEAN, Status.DRIFT}),
            _rule(exitcodes.FAILED, Status.DRIFT),
        )
    ),
    # Nothing verified is not a pass.
    "verify": Policy((_rule(exitcodes.ERROR, all_in={Status.PASSED}),), empty=exitcodes.ERROR),
    "rollout": Policy(
        (
            _rule(exitcodes.INTERRUPTED, Status.INTERRUPTED),
            _rule(exitcodes.FAILED, all_in=SUCCESS),
        )
    ),
}


def exit_code(command: str, statuses: Iterable[str], own: int | None = None) -> int:
    """The exit code of `command` for its containers' statuses."""
    policy = POLICIES[command]
    if policy.own and own is not None:
        return own
    seen = set(statuses)
    if not seen:
        return policy.empty
    for rule in policy.rules:
        if rule.matches(seen):
            return rule.code
    return exitcodes.OK
