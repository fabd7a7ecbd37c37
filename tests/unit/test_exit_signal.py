"""A command killed by a signal (sshd's `exit-signal`) is a failed command, not a lost node."""

from __future__ import annotations

import io

import paramiko
import pytest
from paramiko.common import MSG_CHANNEL_REQUEST

from pctfleet.transport.base import NodeUnreachable
from pctfleet.transport.channel import ExitSignal, pump_channel, watch_exit_signals


class FakeTransport(paramiko.Transport):
    """Only the handler table and what Channel._handle_request touches; no socket."""

    def __init__(self) -> None:  # noqa: D107 - no connection on purpose
        self.server_object = None


def request(name: str, *fields: object) -> paramiko.Message:
    """A CHANNEL_REQUEST as the transport hands it on: its channel id already read."""
    m = paramiko.Message()
    m.add_int(7)
    m.add_string(name)
    m.add_boolean(False)
    for value in fields:
        m.add_boolean(value) if isinstance(value, bool) else m.add(value)
    m.rewind()
    m.get_int()
    return m


def deliver(transport: paramiko.Transport, channel: paramiko.Channel, m: paramiko.Message) -> None:
    transport._channel_handler_table[MSG_CHANNEL_REQUEST](channel, m)


def channel_on(transport: paramiko.Transport) -> paramiko.Channel:
    channel = paramiko.Channel(7)
    channel.transport = transport
    return channel


def test_exit_signal_is_recorded_and_paramiko_still_reads_requests():
    transport = FakeTransport()
    watch_exit_signals(transport)
    channel = channel_on(transport)
    deliver(transport, channel, request("exit-signal", "SEGV", True, "boom", ""))
    assert channel.exit_signal == ExitSignal("SEGV", True, "boom")
    # The hook puts the message back where it found it: paramiko's own reading works.
    deliver(transport, channel, request("exit-status", 3))
    assert channel.exit_status == 3
    assert channel.exit_signal == ExitSignal("SEGV", True, "boom")


def test_the_hook_is_per_transport_and_installed_once():
    transport, other = FakeTransport(), FakeTransport()
    watch_exit_signals(transport)
    table = transport._channel_handler_table
    watch_exit_signals(transport)
    assert transport._channel_handler_table is table
    assert other._channel_handler_table is paramiko.Transport._channel_handler_table
    assert paramiko.Transport._channel_handler_table[MSG_CHANNEL_REQUEST] is (
        paramiko.Channel._handle_request
    )


@pytest.mark.parametrize(
    ("name", "core", "code", "text"),
    [
        ("TERM", False, 143, "killed by signal TERM"),
        ("KILL", False, 137, "killed by signal KILL"),
        ("SEGV", True, 139, "killed by signal SEGV (core dumped)"),
        ("INT", False, 130, "killed by signal INT"),
        ("HUP", False, 129, "killed by signal HUP"),
        ("ABRT", True, 134, "killed by signal ABRT (core dumped)"),
        ("PIPE", False, 141, "killed by signal PIPE"),
        ("FOO@example.com", False, 255, "killed by signal FOO@example.com"),
    ],
)
def test_signal_names_become_shell_exit_codes(name, core, code, text):
    killed = ExitSignal(name, core, "")
    assert (killed.exit_code(), killed.describe()) == (code, text)


class ClosingChannel(paramiko.Channel):
    """A session whose command ends at once: sshd's requests (if any), then close."""

    def __init__(self, transport: paramiko.Transport, *requests: paramiko.Message) -> None:
        super().__init__(7)
        self.transport = transport
        self.requests = requests
        transport._send_user_message = self.run  # the exec request: the command runs

    def get_transport(self) -> paramiko.Transport:
        return self.transport

    def run(self, m: paramiko.Message) -> None:  # noqa: ARG002
        for m in self.requests:
            deliver(self.transport, self, m)
        self.eof_received = True
        self.closed = True
        self.status_event.set()

    def sendall(self, data: bytes) -> None: ...

    def shutdown_write(self) -> None: ...

    def close(self) -> None: ...


def pump(channel: paramiko.Channel) -> tuple[int, bytes]:
    err = io.BytesIO()
    code = pump_channel(channel, "kill -TERM $$", None, 5, io.BytesIO(), err, "node1")
    return code, err.getvalue()


def test_killed_command_is_a_failed_command_with_its_signal_on_stderr():
    channel = ClosingChannel(FakeTransport(), request("exit-signal", "TERM", False, "", ""))
    assert pump(channel) == (143, b"killed by signal TERM\n")


def test_exit_status_wins_and_no_exit_at_all_stays_unreachable():
    assert pump(ClosingChannel(FakeTransport(), request("exit-status", 4))) == (4, b"")
    with pytest.raises(NodeUnreachable, match="before the command reported its exit"):
        pump(ClosingChannel(FakeTransport()))


class SilentSshd(paramiko.Channel):
    """sshd that never answers the exec request: the command reads stdin, exits 0."""

    def __init__(self, transport: paramiko.Transport) -> None:
        super().__init__(7)
        self.transport = transport
        self.sent: list[object] = []
        transport._send_user_message = lambda m: self.sent.append("exec")

    def get_transport(self) -> paramiko.Transport:
        return self.transport

    def sendall(self, data: bytes) -> None:
        self.sent.append(data)

    def shutdown_write(self) -> None:
        deliver(self.transport, self, request("exit-status", 0))
        self.eof_received = True
        self.closed = True

    def close(self) -> None: ...


def test_stdin_follows_the_exec_request_without_waiting_for_its_answer():
    import threading

    channel = SilentSshd(FakeTransport())
    done: list[int] = []

    def run() -> None:
        done.append(pump_channel(channel, "cat", b"data", 5, io.BytesIO(), io.BytesIO(), "n1"))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    assert done == [0]  # waiting for the answer would never end
    assert channel.sent == ["exec", b"data"]
