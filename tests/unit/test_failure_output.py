"""A failed task's why: bounded, redacted output tails and a known cause."""

from __future__ import annotations

from pctfleet.run.failure import TAIL_CHARS, TAIL_LINES, failure_output, shown_tail
from pctfleet.run.results import TaskResult

VENV = (
    "The virtual environment was not created successfully because ensurepip is not\n"
    "available.  On Debian/Ubuntu systems, you need to install the python3-venv\n"
)


def keep(text: str) -> str:
    return text


def test_a_failed_command_keeps_rc_tails_and_the_known_cause():
    out = failure_output({"rc": 1, "stdout": VENV, "stderr": ""}, keep)
    assert out["rc"] == 1 and out["stdout"] == VENV.rstrip("\n") and out["stderr"] == ""
    assert "apt-get install -y python3-venv" in out["cause"]["fix"]
    assert shown_tail(out) == ("stdout", VENV.rstrip("\n"))


def test_stderr_is_shown_before_stdout():
    out = failure_output({"rc": 2, "stdout": "noise", "stderr": "boom"}, keep)
    assert shown_tail(out) == ("stderr", "boom") and "cause" not in out


def test_tails_are_bounded_in_lines_and_characters():
    many = "\n".join(f"line {i}" for i in range(500))
    out = failure_output({"rc": 1, "stdout": many, "stderr": "x" * 50_000}, keep)
    assert out["stdout"].splitlines() == [f"line {i}" for i in range(500 - TAIL_LINES, 500)]
    assert len(out["stderr"]) == TAIL_CHARS and out["stderr"].startswith("...")


def test_tails_pass_through_redaction():
    out = failure_output(
        {"rc": 1, "stdout": "token=s3cret", "stderr": ""}, lambda t: t.replace("s3cret", "****")
    )
    assert out["stdout"] == "token=****"


def test_a_looped_task_reports_its_first_failed_item():
    items = [{"rc": 0, "stdout": "fine"}, {"failed": True, "rc": 3, "stdout": "", "stderr": "bad"}]
    assert failure_output({"results": items, "failed": True}, keep)["rc"] == 3


def test_no_command_no_failure_fields():
    assert failure_output({"failed": True, "msg": "template error"}, keep) == {}
    task = TaskResult("t", "command", "failed", "exit 1")
    assert "rc" not in task.as_json()
    task.failure = failure_output({"rc": 1, "stdout": "", "stderr": "e"}, keep)
    assert task.as_json()["rc"] == 1 and task.as_json()["stderr"] == "e"
