"""When a read-only command that rode behind the login runs again, and when not:
NodeConnection's decisions around preopen.claim, with the SSH parts faked."""

from __future__ import annotations

import io

import pytest

from pctfleet.transport import preopen, ssh
from pctfleet.transport.base import NodeUnreachable
from pctfleet.transport.options import ConnectOptions


class FakeTransport:
    def __init__(self, alive: bool) -> None:
        self.alive = alive
        self.joined = 0

    def join(self, timeout: float) -> None:
        self.joined += 1

    def is_active(self) -> bool:
        return self.alive


class FakeChannel:
    def __init__(self, transport: FakeTransport, refused: bool = False) -> None:
        self.transport = transport
        if refused:
            self.refused = True

    def get_transport(self) -> FakeTransport:
        return self.transport


class Flight:
    def __init__(self, transport: FakeTransport) -> None:
        self.transport = transport

    def wait(self, timeout: float) -> FakeTransport:
        return self.transport


class Conn:
    def __init__(self, transport: FakeTransport) -> None:
        self.transport = transport


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A NodeConnection whose early login's transport is fake; `usual` records the
    commands that ran the usual way (a channel opened after the login)."""
    config = tmp_path / "ssh_config"
    config.write_text("")
    made = ssh.NodeConnection("pve1", "127.0.0.1", ConnectOptions(ssh_config=str(config)))
    made.transport = FakeTransport(alive=False)
    made._flight = Flight(made.transport)
    made._slots = [ssh._Slot(Conn(made.transport))]  # type: ignore[arg-type]
    made._slots[0].alive = lambda: True  # type: ignore[method-assign]
    made.usual = []

    def usual_way() -> tuple:
        made.usual.append(True)
        raise RuntimeError("ran the usual way")

    monkeypatch.setattr(made, "_open_channel", usual_way)
    monkeypatch.setattr(preopen, "kept", lambda channel: True)
    monkeypatch.setattr(preopen, "refusals", lambda transport: 1)
    monkeypatch.setattr(preopen, "confirmed", lambda transport: 3)
    return made


def run(node: ssh.NodeConnection) -> int:
    code, _ = node.exec(
        "probe", stdin=b"", timeout=5, stdout=io.BytesIO(), stderr=io.BytesIO(), read_only=True
    )
    return code


def claim_gives(monkeypatch, channel) -> None:  # noqa: ANN001
    monkeypatch.setattr(preopen, "claim", lambda transport, command: channel)


def pump_does(monkeypatch, action) -> None:  # noqa: ANN001
    def pump(channel, command, stdin, limit, out, err, node, started):  # noqa: ANN001
        assert started  # its exec went out with the claim
        return action(out, err)

    monkeypatch.setattr(ssh, "pump_channel", pump)


def lost(out, err):  # noqa: ANN001
    raise NodeUnreachable("pve1", "connection closed before the command reported its exit")


def test_a_claimed_command_that_ran_is_not_run_again(node, monkeypatch):
    claim_gives(monkeypatch, FakeChannel(node.transport))
    pump_does(monkeypatch, lambda out, err: 0)
    assert run(node) == 0
    assert node.usual == [] and node._slots[0].in_use == 0


def test_a_channel_sshd_refused_runs_the_command_again_within_what_it_opened(node, monkeypatch):
    claim_gives(monkeypatch, FakeChannel(node.transport, refused=True))
    pump_does(monkeypatch, lambda out, err: pytest.fail("nothing runs on a refused channel"))
    with pytest.raises(RuntimeError, match="usual way"):
        run(node)
    assert node.usual == [True]
    assert node.max_sessions == 3 and node._refusals == 1
    assert node.transport.joined == 1  # waited for sshd to hang up first


def test_a_hang_up_before_any_output_runs_it_again(node, monkeypatch):
    claim_gives(monkeypatch, FakeChannel(node.transport))
    pump_does(monkeypatch, lost)
    with pytest.raises(RuntimeError, match="usual way"):
        run(node)
    assert node.usual == [True] and node.max_sessions == 3


def test_a_hang_up_with_no_early_refusal_keeps_the_node_limit(node, monkeypatch):
    """A lost connection is not a sign of MaxSessions: only sshd's refusals are."""
    monkeypatch.setattr(preopen, "refusals", lambda transport: 0)
    claim_gives(monkeypatch, FakeChannel(node.transport))
    pump_does(monkeypatch, lost)
    with pytest.raises(RuntimeError, match="usual way"):
        run(node)
    assert node.max_sessions == 10 and node._refusals == 0


def test_output_already_received_means_the_loss_is_reported(node, monkeypatch):
    def half(out, err):  # noqa: ANN001
        out.write(b"half a probe")
        lost(out, err)

    claim_gives(monkeypatch, FakeChannel(node.transport))
    pump_does(monkeypatch, half)
    with pytest.raises(NodeUnreachable):
        run(node)
    assert node.usual == []


def test_a_loss_on_a_connection_still_up_is_reported(node, monkeypatch):
    node.transport.alive = True
    claim_gives(monkeypatch, FakeChannel(node.transport))
    pump_does(monkeypatch, lost)
    with pytest.raises(NodeUnreachable):
        run(node)
    assert node.usual == []


def test_a_channel_of_a_refused_login_attempt_runs_it_the_usual_way(node, monkeypatch):
    """sshd never read that exec (UNIMPLEMENTED): no limit is learnt from it."""
    monkeypatch.setattr(preopen, "kept", lambda channel: False)
    claim_gives(monkeypatch, FakeChannel(node.transport))
    pump_does(monkeypatch, lambda out, err: pytest.fail("its exec was never read"))
    with pytest.raises(RuntimeError, match="usual way"):
        run(node)
    assert node.max_sessions == 10 and node.transport.joined == 0


def test_a_command_that_changes_things_never_claims(node, monkeypatch):
    monkeypatch.setattr(preopen, "claim", lambda transport, command: pytest.fail("claimed"))
    with pytest.raises(RuntimeError, match="usual way"):
        node.exec("apt-get install", stdin=b"", timeout=5, stdout=io.BytesIO(), stderr=io.BytesIO())


def test_a_stream_on_stdin_never_claims(node, monkeypatch):
    """It could not be sent a second time."""
    monkeypatch.setattr(preopen, "claim", lambda transport, command: pytest.fail("claimed"))
    with pytest.raises(RuntimeError, match="usual way"):
        node.exec(
            "probe",
            stdin=io.BytesIO(b"x"),
            timeout=5,
            stdout=io.BytesIO(),
            stderr=io.BytesIO(),
            read_only=True,
        )


def test_a_channel_refused_while_its_pump_waits_runs_it_again(node, monkeypatch):
    """sshd's refusal can land after the login returned: the command never ran,
    even if the connection is still up when the pump gives up."""
    node.transport.alive = True
    channel = FakeChannel(node.transport)

    def refused_meanwhile(out, err):  # noqa: ANN001
        channel.refused = True
        lost(out, err)

    claim_gives(monkeypatch, channel)
    pump_does(monkeypatch, refused_meanwhile)
    with pytest.raises(RuntimeError, match="usual way"):
        run(node)
    assert node.usual == [True] and node.max_sessions == 3
