"""One exit-code policy for every command: each command's codes, as its --help states them."""

from __future__ import annotations

import json

import pytest

from pctfleet import exitcodes as x
from pctfleet.status import POLICIES, UNREACHED, Status, exit_code

CASES = {
    "run": [
        ([], x.OK),
        (["ok", "changed", "skipped"], x.OK),
        (["ok", "failed"], x.FAILED),
        (["failed", "interrupted"], x.INTERRUPTED),
        *[(["failed", "interrupted", s], x.UNREACHABLE) for s in UNREACHED],
    ],
    "exec": [
        ([], x.OK),
        (["ok", "ok"], x.OK),
        (["ok", "failed"], x.FAILED),
        (["ok", "ct-missing"], x.FAILED),
        (["ok", "ct-stopped"], x.FAILED),
        (["ok", "timeout"], x.FAILED),
        (["failed", "unreachable"], x.UNREACHABLE),
    ],
    "doctor": [
        ([], x.OK),
        (["ok"], x.OK),
        (["ok", "problem"], x.FAILED),
        *[(["problem", s], x.UNREACHABLE) for s in UNREACHED],
    ],
    "audit": [
        ([], x.OK),
        (["clean"], x.OK),
        (["clean", "drift"], x.FAILED),
        (["drift", "interrupted"], x.ERROR),
        *[(["drift", s], x.ERROR) for s in (*UNREACHED, "error")],
    ],
    "verify": [
        ([], x.ERROR),
        (["passed", "passed"], x.OK),
        (["passed", "failed"], x.ERROR),
        *[(["passed", s], x.ERROR) for s in (*UNREACHED, "error")],
    ],
    "rollout": [
        ([], x.OK),
        (["ok", "changed"], x.OK),
        (["ok", "failed"], x.FAILED),
        (["failed", "interrupted"], x.INTERRUPTED),
    ],
}
CASES["provision"] = CASES["run"]


@pytest.mark.parametrize(
    "command, statuses, code",
    [(c, s, code) for c, cases in CASES.items() for s, code in cases],
    ids=[f"{c}-{'+'.join(s) or 'none'}" for c, cases in CASES.items() for s, _ in cases],
)
def test_each_command_exits_as_its_help_says(command, statuses, code):
    assert exit_code(command, statuses) == code


def test_exec_passes_its_one_command_s_own_code_on():
    assert exit_code("exec", ["failed"], own=7) == 7
    assert exit_code("exec", ["unreachable"], own=None) == x.UNREACHABLE
    assert exit_code("run", ["failed"], own=0) == x.FAILED


def test_every_command_has_a_policy_and_a_test():
    assert (
        set(POLICIES)
        == set(CASES)
        == {"run", "provision", "exec", "doctor", "audit", "verify", "rollout"}
    )


def test_a_status_reads_as_its_word():
    assert Status.CT_MISSING == "ct-missing" and f"{Status.CT_MISSING}" == "ct-missing"
    assert json.dumps({Status.OK: [Status.FAILED]}) == '{"ok": ["failed"]}'
    assert "timeout" in UNREACHED and "failed" not in UNREACHED
