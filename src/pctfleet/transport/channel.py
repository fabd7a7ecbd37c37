"""Stream one command over one SSH channel: stdin in, stdout/stderr out, a deadline.

Output is written to the sinks chunk by chunk as it arrives, so a command that
prints 50 MB never needs 50 MB of memory on the controller.
"""

from __future__ import annotations

import select
import signal
import threading
import time
from typing import BinaryIO, NamedTuple

import paramiko
from paramiko.common import MSG_CHANNEL_REQUEST, cMSG_CHANNEL_REQUEST

from pctfleet.transport.base import CHUNK, CommandTimeout, NodeUnreachable, Stdin, stdin_chunks


class ExitSignal(NamedTuple):
    """What sshd sent in `exit-signal` (RFC 4254 6.10): the command died by a signal."""

    name: str  # without "SIG": TERM, KILL, SEGV
    core_dumped: bool
    message: str

    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports it; 255 for a name we don't know."""
        try:
            return 128 + signal.Signals[f"SIG{self.name}"].value
        except KeyError:
            return 255

    def describe(self) -> str:
        text = f"killed by signal {self.name}" + (" (core dumped)" if self.core_dumped else "")
        return f"{text}: {self.message}" if self.message else text


_handle_request = paramiko.Transport._channel_handler_table[MSG_CHANNEL_REQUEST]


def _note_exit_signal(channel: paramiko.Channel, m: paramiko.Message) -> None:
    """paramiko drops `exit-signal`: keep it on the channel, then let paramiko read
    the request as always (from where it started)."""
    start = m.packet.tell()
    try:
        if m.get_text() == "exit-signal":
            m.get_boolean()  # want-reply, always false
            channel.exit_signal = ExitSignal(m.get_text(), m.get_boolean(), m.get_text())
    finally:
        m.packet.seek(start)
    _handle_request(channel, m)


def watch_exit_signals(transport: paramiko.Transport) -> None:
    """Have this transport record `exit-signal` on its channels (once per transport)."""
    if "_channel_handler_table" not in vars(transport):
        table = dict(type(transport)._channel_handler_table)
        table[MSG_CHANNEL_REQUEST] = _note_exit_signal
        transport._channel_handler_table = table


def start_command(channel: paramiko.Channel, command: str) -> None:
    """paramiko's exec_command without waiting for sshd's answer: stdin follows at
    once. sshd handles a channel's messages in order and starts the command before
    reading the next, so the data reaches it; one round trip less per command. A
    refused exec closes the channel, which pump_channel reports as before."""
    m = paramiko.Message()
    m.add_byte(cMSG_CHANNEL_REQUEST)
    m.add_int(channel.remote_chanid)
    m.add_string("exec")
    m.add_boolean(True)
    m.add_string(command)
    channel._event_pending()
    channel.transport._send_user_message(m)


def _feed_stdin(channel: paramiko.Channel, stdin: Stdin) -> None:
    """Send stdin then EOF; runs in its own thread so a full window never deadlocks."""
    try:
        for chunk in stdin_chunks(stdin):
            channel.sendall(chunk)
        channel.shutdown_write()
    except (OSError, EOFError, paramiko.SSHException):
        pass  # the reader side reports what went wrong


def _drain(channel: paramiko.Channel, stdout: BinaryIO, stderr: BinaryIO) -> bool:
    """Move whatever has arrived into the sinks; True if anything moved."""
    moved = False
    while channel.recv_ready():
        stdout.write(channel.recv(CHUNK))
        moved = True
    while channel.recv_stderr_ready():
        stderr.write(channel.recv_stderr(CHUNK))
        moved = True
    return moved


def pump_channel(
    channel: paramiko.Channel,
    command: str,
    stdin: Stdin,
    timeout: float | None,
    stdout: BinaryIO,
    stderr: BinaryIO,
    node: str,
    started: bool = False,
) -> int:
    """Run `command` on an open session channel and return its exit status
    (`started`: its exec request is out already)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    watch_exit_signals(channel.get_transport())
    try:
        if not started:
            start_command(channel, command)
        feeder = threading.Thread(target=_feed_stdin, args=(channel, stdin), daemon=True)
        feeder.start()
        while True:
            moved = _drain(channel, stdout, stderr)
            if channel.exit_status_ready() and not moved and channel.eof_received:
                _drain(channel, stdout, stderr)
                break
            if channel.closed and not moved:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise CommandTimeout(
                    node,
                    f"command did not finish within {timeout:g}s",
                    "raise --timeout or the task's timeout if the work is expected to be slow",
                )
            if not moved:
                select.select([channel], [], [], 0.2)
        code = channel.recv_exit_status()
    except (OSError, EOFError, paramiko.SSHException) as exc:
        raise NodeUnreachable(node, f"connection lost during a command: {exc}") from None
    finally:
        channel.close()
    killed: ExitSignal | None = getattr(channel, "exit_signal", None)
    if code == -1 and killed is not None:
        # A failed command, not a lost node: say so where its own errors go.
        stderr.write(f"{killed.describe()}\n".encode())
        return killed.exit_code()
    if code == -1:
        raise NodeUnreachable(node, "connection closed before the command reported its exit")
    return code
