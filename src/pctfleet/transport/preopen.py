"""Session channels asked for in the same flight as the login, one round trip sooner.

A run knows how many commands it will start on a node at once: one per container,
up to the node's session cap. Opening each channel only after sshd has answered
the login costs a round trip on every first command. OpenSSH's sshd reads a
connection's messages in order and stops reading at the one that completes the
login; what follows waits in its buffer, which the privilege-separated session
inherits, and is then read as if sent after the answer. So the CHANNEL_OPENs go
out right behind the (pipelined) USERAUTH_REQUEST, and the run's first commands
take them instead of opening their own.

When that login attempt fails, sshd answers each early CHANNEL_OPEN with
UNIMPLEMENTED, not with a channel: those are dropped at the failure, and an
attempt that follows (the next key) asks again. Only sshd from OpenSSH is asked
this way; any other server gets channels the usual way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import paramiko
from paramiko.common import cMSG_CHANNEL_OPEN

OPENSSH = "SSH-2.0-OpenSSH_"


@dataclass
class Pending:
    """The early channels of one transport, and whether their login attempt failed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    # paramiko maps channel ids to channels weakly: these hold them until taken.
    asked: list[tuple[paramiko.Channel, threading.Event]] = field(default_factory=list)
    failed: bool = False  # the attempt they follow was refused: ask for none


def _pending(transport: paramiko.Transport) -> Pending:
    found = getattr(transport, "early_channels", None)
    if found is None:
        found = transport.early_channels = Pending()
    return found


def attempt(transport: paramiko.Transport) -> None:
    """A new login attempt is about to go out: it may be followed by channels again."""
    pending = _pending(transport)
    with pending.lock:
        pending.failed = False


def ask(transport: paramiko.Transport, count: int) -> int:
    """Send up to `count` CHANNEL_OPENs for sessions, less those already waiting;
    how many were sent. Call right after the login request went out."""
    pending = _pending(transport)
    if not transport.remote_version.startswith(OPENSSH):
        return 0
    with pending.lock:
        if pending.failed:  # refused before we got here: sshd would drop them
            return 0
        asked = [_register(transport) for _ in range(max(0, count - len(pending.asked)))]
        pending.asked += [(channel, event) for channel, event, _ in asked]
    # Sent outside the lock: a send may wait for a key exchange, whose thread must
    # be free to drop these (refused) meanwhile. A dropped one sent anyway is
    # answered with UNIMPLEMENTED, which paramiko ignores.
    for _, _, message in asked:
        transport._send_user_message(message)
    return len(asked)


def _register(
    transport: paramiko.Transport,
) -> tuple[paramiko.Channel, threading.Event, paramiko.Message]:
    """paramiko's open_channel("session") up to sending: the channel in paramiko's
    table and its CHANNEL_OPEN. The wait is take()'s."""
    with transport.lock:
        window = transport._sanitize_window_size(None)
        max_packet = transport._sanitize_packet_size(None)
        chanid = transport._next_channel()
        m = paramiko.Message()
        m.add_byte(cMSG_CHANNEL_OPEN)
        m.add_string("session")
        m.add_int(chanid)
        m.add_int(window)
        m.add_int(max_packet)
        channel = paramiko.Channel(chanid)
        transport._channels.put(chanid, channel)
        transport.channel_events[chanid] = event = threading.Event()
        transport.channels_seen[chanid] = True
        channel._set_transport(transport)
        channel._set_window(window, max_packet)
    return channel, event, m


def refused(transport: paramiko.Transport) -> None:
    """The login attempt was refused: the channels behind it never come."""
    _drop_all(transport, _pending(transport))


def _drop_all(transport: paramiko.Transport, pending: Pending) -> None:
    """Forget every channel still waiting, and ask for none until the next attempt."""
    with pending.lock:
        pending.failed = True
        dropped, pending.asked = pending.asked, []
    with transport.lock:
        for channel, event in dropped:
            transport._channels.delete(channel.chanid)
            transport.channel_events.pop(channel.chanid, None)
            event.set()


def take(transport: paramiko.Transport, timeout: float) -> paramiko.Channel | None:
    """An early channel, once sshd has confirmed it; None when none is left or
    sshd refused it (the caller then opens one the usual way)."""
    pending = getattr(transport, "early_channels", None)
    if pending is None:
        return None
    with pending.lock:
        if not pending.asked:
            return None
        channel, event = pending.asked.pop(0)
    if not event.wait(timeout):
        # sshd answers in order: the ones behind this will not come either, so
        # nobody else waits for them. A confirmation after this is paramiko's
        # "unrequested"; the session it opened goes with the connection.
        with pending.lock:
            pending.asked.insert(0, (channel, event))
        _drop_all(transport, pending)
        return None
    if transport._channels.get(channel.chanid) is not channel:
        # Refused: paramiko unmapped it and kept sshd's reason, as open_channel
        # does; taken here, so no later failure reports this one's reason.
        transport.get_exception()
        return None
    return channel
