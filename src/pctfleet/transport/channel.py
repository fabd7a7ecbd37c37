"""Stream one command over one SSH channel: stdin in, stdout/stderr out, a deadline.

Output is written to the sinks chunk by chunk as it arrives, so a command that
prints 50 MB never needs 50 MB of memory on the controller.
"""

from __future__ import annotations

import select
import threading
import time
from typing import BinaryIO

import paramiko

from pctfleet.transport.base import CHUNK, CommandTimeout, NodeUnreachable, Stdin, stdin_chunks


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
) -> int:
    """Run `command` on an open session channel and return its exit status."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        channel.exec_command(command)
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
    if code == -1:
        raise NodeUnreachable(node, "connection closed before the command reported its exit")
    return code
