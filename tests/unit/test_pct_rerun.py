"""A `pct exec` that dies by a signal before its command starts is sent once more.

LXC 5.0's lxc-attach re-executes itself from a sealed memfd before it attaches;
under load the sealing can fail, and its error path then aborts (SIGABRT, exit
134 through sshd). Nothing ran in the container, so running it again is safe;
a command that did start, or pct's own errors (exit 255), are never repeated.
"""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from pctfleet.transport import pct as pct_module
from pctfleet.transport.base import ContainerStopped, PctError
from pctfleet.transport.pct import MARKER, PctTarget

REXEC = b"Device or resource busy - Failed to rexec as memfd\nkilled by signal ABRT\n"


class ScriptedNode:
    """A node whose `exec` plays one answer per call: (exit code, stdout, stderr)."""

    node = "pve1"
    target = SimpleNamespace(user="root")
    options = SimpleNamespace(connect_timeout=5.0, command_timeout=600.0)

    def __init__(self, *answers: tuple[int, bytes, bytes]) -> None:
        self.answers = list(answers)
        self.calls: list[dict] = []

    def exec(self, command, *, stdin, timeout, stdout, stderr, read_only=False):  # noqa: ANN001
        self.calls.append({"command": command, "stdin": stdin, "timeout": timeout})
        code, out, err = self.answers.pop(0)
        for stream, data in ((stdout, out), (stderr, err)):
            for start in range(0, len(data), 32 * 1024):  # as SSH's window hands it on
                stream.write(data[start : start + 32 * 1024])
        return code, 0.01


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(pct_module, "_RERUN_PAUSE_S", 0.0)


def entered(code: int, out: bytes = b"", err: bytes = b"") -> tuple[int, bytes, bytes]:
    return code, MARKER + out, MARKER + err


def test_a_crash_before_the_command_started_is_sent_again_with_the_same_stdin():
    node = ScriptedNode((134, b"", REXEC), entered(0, b"hello\n"))
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    result = target.run(["/bin/sh", "-s"], stdin=b"echo hello\n", timeout=30)
    assert (result.exit_code, result.stdout, result.stderr) == (0, b"hello\n", b"")
    assert [c["stdin"] for c in node.calls] == [b"echo hello\n", b"echo hello\n"]
    assert node.calls[0]["command"] == node.calls[1]["command"]
    assert (target.calls, target.reruns) == (1, 1)
    assert 29.0 <= node.calls[1]["timeout"] < 30  # what is left of the limit


def test_a_second_crash_is_reported_with_pcts_words():
    node = ScriptedNode((134, b"", REXEC), (134, b"", REXEC))
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    with pytest.raises(PctError) as caught:
        target.run(["true"])
    assert caught.value.message == "pct failed (exit 134): killed by signal ABRT"
    assert (len(node.calls), target.reruns) == (2, 1)


@pytest.mark.parametrize(
    "answer",
    [
        (255, b"", b"container '200' not running!\n"),  # pct's own error
        (1, b"", b"some failure\n"),
    ],
)
def test_pcts_own_errors_are_not_sent_again(answer):
    node = ScriptedNode(answer)
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    with pytest.raises((PctError, ContainerStopped)):
        target.run(["true"])
    assert (len(node.calls), target.reruns) == (1, 0)


def test_a_command_killed_after_it_started_is_not_sent_again():
    killed = entered(137, err=b"killed by signal KILL\n")
    node = ScriptedNode(killed, (0, b"status: running\n", b""))
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    result = target.run(["sleep", "100"])
    assert (result.exit_code, target.reruns) == (137, 0)
    assert "exec" not in node.calls[1]["command"]  # only pct status asked after it


def test_a_stream_on_stdin_is_not_sent_again():
    node = ScriptedNode((134, b"", REXEC))
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    with pytest.raises(PctError):
        target.run(["cat"], stdin=io.BytesIO(b"part of it may be gone"))
    assert (len(node.calls), target.reruns) == (1, 0)


def test_the_node_output_of_the_crashed_call_is_not_passed_on():
    greeting = b"welcome to pve1\n"
    node = ScriptedNode((134, greeting, greeting + REXEC), entered(0, b"ok\n"))
    result = PctTarget(node, 200).run(["true"])  # type: ignore[arg-type]
    assert (result.stdout, result.stderr) == (b"ok\n", b"")


def test_past_the_markers_scan_nothing_is_sent_again():
    """A node that says more than the filter scans before pct starts (`set -x` in
    root's ~/.bashrc): whether the command ran cannot be told, so it is not rerun."""
    noise = b"+ x\n" * 50_000
    node = ScriptedNode((143, noise + MARKER + b"started\n", noise + MARKER))
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    with pytest.raises(PctError):
        target.run(["sleep", "9"])
    assert (len(node.calls), target.reruns) == (1, 0)


def test_no_rerun_once_the_time_is_spent(monkeypatch):
    clock = iter([0.0, 30.0, 30.0, 30.0])
    monkeypatch.setattr(pct_module.time, "monotonic", lambda: next(clock))
    node = ScriptedNode((134, b"", REXEC))
    target = PctTarget(node, 200)  # type: ignore[arg-type]
    with pytest.raises(PctError):
        target.run(["true"], timeout=30)
    assert (len(node.calls), target.reruns) == (1, 0)


def test_without_a_timeout_the_rerun_gets_what_is_left_of_the_default():
    node = ScriptedNode((134, b"", REXEC), entered(0))
    PctTarget(node, 200).run(["true"])  # type: ignore[arg-type]
    assert [c["timeout"] for c in node.calls][0] == 600.0
    assert 590.0 < node.calls[1]["timeout"] < 600.0


def test_with_no_time_limit_at_all_the_rerun_has_none_either():
    node = ScriptedNode((134, b"", REXEC), entered(0, b"ok\n"))
    node.options = SimpleNamespace(connect_timeout=5.0, command_timeout=None)
    result = PctTarget(node, 200).run(["true"])  # type: ignore[arg-type]
    assert result.stdout == b"ok\n"
    assert [c["timeout"] for c in node.calls] == [None, None]
