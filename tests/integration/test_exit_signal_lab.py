"""A node-side command killed by a signal is a failed command, never an unreachable node."""

from __future__ import annotations

import io

import pytest

from pctfleet.run import adhoc
from pctfleet.status import exit_code
from pctfleet.transport.base import PctError
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodeConnection

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def node(lab):
    info = lab.up(nodes=2, containers=2)
    spec = info.nodes[0]
    options = ConnectOptions(identity=str(info.identity), known_hosts=str(info.known_hosts))
    conn = NodeConnection(spec.name, spec.address, options)
    yield conn
    conn.close()


def node_exec(conn: NodeConnection, command: str) -> tuple[int, bytes]:
    err = io.BytesIO()
    code, _ = conn.exec(command, stdin=b"", timeout=30, stdout=io.BytesIO(), stderr=err)
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("command", "code", "said"),
    [
        ("echo before >&2; kill -TERM $$", 143, b"before\nkilled by signal TERM\n"),
        ("kill -KILL $$", 137, b"killed by signal KILL\n"),
        ("ulimit -c 0; kill -SEGV $$", 139, b"killed by signal SEGV\n"),
    ],
)
def test_node_command_killed_by_a_signal_fails_with_128_plus_its_number(node, command, code, said):
    assert node_exec(node, command) == (code, said)
    # The connection is fine: the next command runs on it as usual.
    assert node_exec(node, "exit 5") == (5, b"")


def test_node_side_pct_killed_before_entering_is_a_failed_pct(node):
    """The node-side process (here `pct` itself) dies by a signal before it entered
    the container: pct failed, with that signal as its reason; never unreachable."""
    target = PctTarget(node, 200)
    target.command_line = lambda argv: "kill -TERM $$"  # type: ignore[method-assign]
    with pytest.raises(PctError, match="pct failed \\(exit 143\\): killed by signal TERM"):
        target.run(["true"])


def test_node_side_pct_killed_inside_is_the_commands_failure(node):
    """Killed after it entered: the container's command failed with 128+N, as
    `pctfleet exec` reports it (status failed, exit code 143, the signal on stderr)."""
    target = PctTarget(node, 200)
    marker = "printf '\\036pctfleet-entered\\n'"
    entered = f"{marker}; {marker} >&2; kill -TERM $$"  # as the real wrapper marks both
    target.command_line = lambda argv: entered  # type: ignore[method-assign]
    [outcome] = adhoc.run_exec([target], ["true"], b"", adhoc.OutputPlan("collect"))
    assert (outcome.status, outcome.exit_code) == ("failed", 143), outcome
    assert (outcome.stdout, outcome.stderr) == (b"", b"killed by signal TERM\n")
    assert exit_code("exec", [outcome.status], own=outcome.exit_code) == 143
