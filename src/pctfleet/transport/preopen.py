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

A read-only command may go further and ride the same flight (`claim`): its exec
request names sshd's channel before sshd has said which it is. OpenSSH numbers
a connection's channels from 0, each the lowest number free, and a fresh login
has none open: so the early channels are 0, 1, 2... in the order asked. Every
confirmation is checked against that number; a miss, once an exec went out on
a number, closes the connection. When sshd allows fewer sessions than were
asked (MaxSessions), it refuses the rest and then drops the connection at the
exec for a channel it never opened: that is why only a command that can be run
again rides this way (the caller runs it again on a new login, within the
sessions sshd did open), and why nothing is sent on a number once the login's
answer is in: from then on a command may be running on a confirmed channel,
and the wait for a channel's own answer is short. Pre-login, sshd answers an
exec with UNIMPLEMENTED, as it does the channel: nothing runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import paramiko
from paramiko.common import MSG_CHANNEL_OPEN_FAILURE, MSG_CHANNEL_OPEN_SUCCESS, cMSG_CHANNEL_OPEN

from pctfleet.transport.channel import start_command

OPENSSH = "SSH-2.0-OpenSSH_"


@dataclass
class Pending:
    """The early channels of one transport, and whether their login attempt failed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    # paramiko maps channel ids to channels weakly: these hold them until taken.
    asked: list[tuple[paramiko.Channel, threading.Event]] = field(default_factory=list)
    failed: bool = False  # the attempt they follow was refused: ask for none
    numbered: int = 0  # channels asked behind this attempt: the next one's number at sshd
    confirmed: int = 0  # early channels sshd opened: the sessions it allows at least
    numbers_hold: bool = True  # every confirmation so far bore the number we gave
    guessed: bool = False  # an exec went out on a number before its confirmation
    refusals: int = 0  # early channels sshd refused (past MaxSessions)
    claimed: list[paramiko.Channel] = field(default_factory=list)  # this attempt's, sent on


def _pending(transport: paramiko.Transport) -> Pending:
    found = getattr(transport, "early_channels", None)
    if found is None:
        found = transport.early_channels = Pending()
    return found


def attempt(transport: paramiko.Transport) -> None:
    """A new login attempt is about to go out: it may be followed by channels again."""
    pending = _pending(transport)
    # An attempt that ended unanswered (auth timeout) leaves channels numbered for
    # it: the next attempt's would repeat those numbers.
    _drop_all(transport, pending, refused=True)
    with pending.lock:
        pending.failed = False
        pending.numbered = 0
        pending.guessed = False


def ask(transport: paramiko.Transport, count: int) -> int:
    """Send up to `count` CHANNEL_OPENs for sessions, less those already waiting;
    how many were sent. Call right after the login request went out."""
    pending = _pending(transport)
    if not transport.remote_version.startswith(OPENSSH):
        return 0
    _check_numbers(transport)
    with pending.lock:
        if pending.failed:  # refused before we got here: sshd would drop them
            return 0
        asked = [_register(transport) for _ in range(max(0, count - len(pending.asked)))]
        for channel, _, _ in asked:
            channel.sshd_number = pending.numbered
            pending.numbered += 1
    # Sent outside the lock: a send may wait for a key exchange, whose thread must
    # be free to drop these (refused) meanwhile. A dropped one sent anyway is
    # answered with UNIMPLEMENTED, which paramiko ignores. Only once sent may a
    # command claim one: its exec must not overtake its CHANNEL_OPEN.
    for _, _, message in asked:
        transport._send_user_message(message)
    with pending.lock:
        if not pending.failed:
            pending.asked += [(channel, event) for channel, event, _ in asked]
            return len(asked)
    _forget(transport, [(channel, event) for channel, event, _ in asked], [])
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


def claim(transport: paramiko.Transport, command: str) -> paramiko.Channel | None:
    """An early channel with `command` sent on it at once, before sshd has confirmed
    the channel or the login (see above); None when none is left. Only for a
    command that may run twice. Whether it ran: `NodeConnection.exec`."""
    pending = getattr(transport, "early_channels", None)
    if pending is None:
        return None
    # Under the lock: a refusal (taken under it) cannot come between the check and
    # the send, so no exec of this attempt follows the next attempt's login request.
    with pending.lock:
        if pending.failed or not pending.asked:
            return None
        channel, event = pending.asked[0]
        with transport.lock:
            if not channel.active:  # not confirmed yet (or refused): name it by its number
                sure = pending.numbers_hold and not pending.refusals
                if not sure or transport.is_authenticated():
                    return None  # take() waits for sshd's answer instead
                channel.remote_chanid = channel.sshd_number
                channel.active = 1
                pending.guessed = True
            channel.claimed = True
        pending.asked.pop(0)
        pending.claimed.append(channel)
        start_command(channel, command)
    return channel


def _check_numbers(transport: paramiko.Transport) -> None:
    """Check each early channel's confirmation against the number it was given;
    close a claimed channel that sshd refused (no command runs on it)."""
    table = transport._handler_table
    if getattr(table[MSG_CHANNEL_OPEN_SUCCESS], "checks_numbers", False):
        return
    opened, failed = table[MSG_CHANNEL_OPEN_SUCCESS], table[MSG_CHANNEL_OPEN_FAILURE]

    def on_open(m: paramiko.Message) -> None:
        channel = _channel_of(transport, m)
        opened(m)
        number = getattr(channel, "sshd_number", None)
        if number is None:
            return
        with channel.lock:  # a claimed one's stdin may wait for this window
            channel.out_buffer_cv.notify_all()
        pending = _pending(transport)
        with pending.lock:
            pending.confirmed += 1
            if channel.remote_chanid == number:
                return
            pending.numbers_hold = False
            misrouted = pending.guessed
        if misrouted:  # an exec may have reached another channel: nothing here is sure
            transport.close()

    def on_failure(m: paramiko.Message) -> None:
        channel = _channel_of(transport, m)
        failed(m)
        if getattr(channel, "sshd_number", None) is not None:
            pending = _pending(transport)
            with pending.lock:
                pending.refusals += 1
        if channel is not None and getattr(channel, "claimed", False):
            transport.get_exception()  # its reason is nobody's open_session failure
            channel.refused = True  # not dropped: its login stands, the node's cap is lower
            with channel.lock:
                channel._set_closed()  # its pump ends now; it ran nothing

    on_open.checks_numbers = True  # type: ignore[attr-defined]
    table[MSG_CHANNEL_OPEN_SUCCESS] = on_open
    table[MSG_CHANNEL_OPEN_FAILURE] = on_failure


def _channel_of(transport: paramiko.Transport, m: paramiko.Message) -> paramiko.Channel | None:
    """The channel a CHANNEL_OPEN answer is for, the message left unread."""
    start = m.packet.tell()
    channel = transport._channels.get(m.get_int())
    m.packet.seek(start)
    return channel


def kept(channel: paramiko.Channel) -> bool:
    """Whether a claimed channel still stands: not dropped with its login attempt
    (a connection that died later unmaps its channels too, but they stood)."""
    return not getattr(channel, "dropped", False)


def refusals(transport: paramiko.Transport) -> int:
    """How many early channels sshd refused on this connection (past MaxSessions)."""
    pending = getattr(transport, "early_channels", None)
    return pending.refusals if pending is not None else 0


def confirmed(transport: paramiko.Transport) -> int:
    """How many early channels sshd opened on this connection."""
    pending = getattr(transport, "early_channels", None)
    return pending.confirmed if pending is not None else 0


def refused(transport: paramiko.Transport) -> None:
    """The login attempt was refused: the channels behind it never come."""
    _drop_all(transport, _pending(transport), refused=True)


def _drop_all(transport: paramiko.Transport, pending: Pending, refused: bool = False) -> None:
    """Forget every channel still waiting, and ask for none until the next attempt;
    on a refused login, the claimed ones too (their exec went unread)."""
    with pending.lock:
        pending.failed = True
        dropped, pending.asked = pending.asked, []
        claimed, pending.claimed = (pending.claimed, []) if refused else ([], pending.claimed)
    _forget(transport, dropped, claimed)


def _forget(
    transport: paramiko.Transport,
    dropped: list[tuple[paramiko.Channel, threading.Event]],
    claimed: list[paramiko.Channel],
) -> None:
    """Unmap channels sshd never opened; a claimed one is closed too, without a
    word to sshd: its number may be another channel's behind the next attempt."""
    with transport.lock:
        for channel, event in dropped:
            transport._channels.delete(channel.chanid)
            transport.channel_events.pop(channel.chanid, None)
            event.set()
        for channel in claimed:  # the claimer sees it gone
            transport._channels.delete(channel.chanid)
            transport.channel_events.pop(channel.chanid, None)
            channel.dropped = True
            with channel.lock:
                channel._set_closed()


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
