"""Session channels asked for behind the login: what is asked, when nothing is, and
how a refused login or a refused channel hands the caller back to paramiko."""

from __future__ import annotations

import socket
import threading
import time

import paramiko
import pytest
from paramiko.common import (
    MSG_CHANNEL_OPEN_FAILURE,
    MSG_CHANNEL_OPEN_SUCCESS,
    OPEN_FAILED_CONNECT_FAILED,
    cMSG_CHANNEL_OPEN,
    cMSG_CHANNEL_REQUEST,
)

from pctfleet.transport import preopen


@pytest.fixture
def transport():
    """A real, never started paramiko Transport: its channel table and lock are the
    ones preopen works on; a message 'sent' on it is dropped (not active)."""
    ours, theirs = socket.socketpair()
    made = paramiko.Transport(ours)
    made.remote_version = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10"
    yield made
    ours.close()
    theirs.close()


def confirm(transport: paramiko.Transport, chanid: int) -> None:
    """sshd's CHANNEL_OPEN_CONFIRMATION for our channel `chanid`, as paramiko reads it."""
    m = paramiko.Message()
    for value in (chanid, 100 + chanid, 2097152, 32768):
        m.add_int(value)
    m.rewind()
    transport._parse_channel_open_success(m)


def open_failure(chanid: int) -> paramiko.Message:
    """sshd's CHANNEL_OPEN_FAILURE past MaxSessions, ready to read."""
    m = paramiko.Message()
    m.add_int(chanid)
    m.add_int(OPEN_FAILED_CONNECT_FAILED)
    m.add_string("open failed")
    m.add_string("")
    m.rewind()
    return m


def refuse(transport: paramiko.Transport, chanid: int) -> None:
    transport._parse_channel_open_failure(open_failure(chanid))


def test_asks_for_the_channels_wanted_once(transport):
    assert preopen.ask(transport, 3) == 3
    assert preopen.ask(transport, 3) == 0  # three still waiting: none more
    assert len(transport._channels.values()) == 3


def test_a_confirmed_channel_is_taken_in_the_order_asked(transport):
    preopen.ask(transport, 2)
    first, second = (c.get_id() for c, _ in transport.early_channels.asked)
    confirm(transport, second)
    confirm(transport, first)
    taken = preopen.take(transport, 1.0)
    assert taken is not None and taken.get_id() == first
    assert taken.remote_chanid == 100 + first
    assert preopen.take(transport, 1.0).get_id() == second
    assert preopen.take(transport, 1.0) is None  # none left: the caller opens one


def test_a_caller_waits_for_the_confirmation(transport):
    preopen.ask(transport, 1)
    ((channel, _),) = transport.early_channels.asked
    threading.Timer(0.2, confirm, (transport, channel.get_id())).start()
    started = time.monotonic()
    assert preopen.take(transport, 5.0) is channel
    assert 0.15 < time.monotonic() - started < 2.0


def test_a_refused_channel_is_none_and_gone(transport):
    preopen.ask(transport, 1)
    ((channel, _),) = transport.early_channels.asked
    refuse(transport, channel.get_id())
    assert preopen.take(transport, 1.0) is None
    assert transport._channels.get(channel.get_id()) is None


def test_a_refused_login_drops_its_channels_at_once(transport):
    """sshd answers an early CHANNEL_OPEN behind a refused key with UNIMPLEMENTED:
    the channels are dropped at the refusal, so nobody waits for them."""
    preopen.ask(transport, 2)
    preopen.refused(transport)
    started = time.monotonic()
    assert preopen.take(transport, 5.0) is None
    assert time.monotonic() - started < 0.5
    assert transport._channels.values() == []


def test_after_a_refusal_only_a_new_attempt_asks_again(transport):
    preopen.refused(transport)  # the answer came before we asked
    assert preopen.ask(transport, 2) == 0
    preopen.attempt(transport)  # the next key
    assert preopen.ask(transport, 2) == 2


def test_a_channel_never_confirmed_gives_up_every_one_behind_it(transport):
    """sshd answers in order: after one timeout nobody waits for the others."""
    preopen.ask(transport, 3)
    asked = [channel.get_id() for channel, _ in transport.early_channels.asked]
    assert preopen.take(transport, 0.1) is None
    started = time.monotonic()
    assert preopen.take(transport, 5.0) is None
    assert time.monotonic() - started < 0.5
    assert all(transport._channels.get(chanid) is None for chanid in asked)
    assert preopen.ask(transport, 3) == 0  # and none asked again on this login


def test_a_refused_channel_leaves_no_reason_for_a_later_failure(transport):
    """paramiko keeps sshd's refusal as the transport's exception until someone
    takes it (open_channel does); taking the channel takes it."""
    preopen.ask(transport, 1)
    ((channel, _),) = transport.early_channels.asked
    refuse(transport, channel.get_id())
    assert transport.saved_exception is not None
    preopen.take(transport, 1.0)
    assert transport.saved_exception is None


def test_only_openssh_is_asked(transport):
    transport.remote_version = "SSH-2.0-dropbear_2022.83"
    assert preopen.ask(transport, 2) == 0
    assert preopen.take(transport, 1.0) is None


def test_a_transport_never_asked_has_nothing_to_take(transport):
    assert preopen.take(transport, 1.0) is None


# -- a read-only command riding behind the login (claim) -------------------------


@pytest.fixture
def sent(transport, monkeypatch) -> list[tuple[int, str]]:
    """(recipient channel, request) of each CHANNEL_REQUEST the transport sends."""
    seen: list[tuple[int, str]] = []

    def send(m: paramiko.Message) -> None:
        m.rewind()
        if m.get_byte() == cMSG_CHANNEL_REQUEST:
            seen.append((m.get_int(), m.get_text()))

    monkeypatch.setattr(transport, "_send_user_message", send)
    return seen


def answer(transport: paramiko.Transport, chanid: int, number: int) -> None:
    """sshd's confirmation naming its channel `number`, through the transport's handler."""
    m = paramiko.Message()
    for value in (chanid, number, 0, 32768):
        m.add_int(value)
    m.rewind()
    transport._handler_table[MSG_CHANNEL_OPEN_SUCCESS](m)


def fail(transport: paramiko.Transport, chanid: int) -> None:
    """The same refusal, through the transport's handler (as its thread reads it)."""
    transport._handler_table[MSG_CHANNEL_OPEN_FAILURE](open_failure(chanid))


def test_a_claimed_channel_carries_its_exec_before_sshd_confirms_it(transport, sent, monkeypatch):
    """OpenSSH numbers a fresh connection's channels 0, 1, 2... in the order asked."""
    monkeypatch.setattr(transport, "close", lambda: pytest.fail("the numbers held"))
    preopen.ask(transport, 3)
    first = preopen.claim(transport, "pct exec 200 -- true")
    second = preopen.claim(transport, "pct exec 201 -- true")
    assert sent == [(0, "exec"), (1, "exec")]
    assert (first.remote_chanid, second.remote_chanid) == (0, 1)
    answer(transport, first.get_id(), 0)
    answer(transport, second.get_id(), 1)
    assert preopen.confirmed(transport) == 2
    assert preopen.kept(first) and preopen.kept(second)


def test_the_numbers_restart_behind_each_login_attempt(transport, sent):
    preopen.ask(transport, 2)
    preopen.refused(transport)
    preopen.attempt(transport)
    preopen.ask(transport, 2)
    preopen.claim(transport, "true")
    assert sent == [(0, "exec")]


def test_a_confirmation_with_another_number_closes_a_connection_that_guessed(
    transport, sent, monkeypatch
):
    closed: list[bool] = []
    monkeypatch.setattr(transport, "close", lambda: closed.append(True))
    preopen.ask(transport, 2)
    channel = preopen.claim(transport, "true")
    answer(transport, channel.get_id(), 7)  # not OpenSSH's numbering
    assert closed == [True]


def test_after_another_number_nothing_more_is_guessed(transport, sent, monkeypatch):
    """A mismatch before any claim harms nothing, but no exec goes out unconfirmed."""
    monkeypatch.setattr(transport, "close", lambda: pytest.fail("nothing was guessed"))
    preopen.ask(transport, 2)
    first, second = (c for c, _ in transport.early_channels.asked)
    answer(transport, first.get_id(), 5)
    assert preopen.claim(transport, "true") is first  # confirmed: sent to sshd's number
    assert preopen.claim(transport, "true") is None  # unconfirmed: left for take()
    assert sent == [(5, "exec")]
    answer(transport, second.get_id(), 6)
    assert preopen.take(transport, 1.0) is second


def test_a_refused_login_takes_the_claimed_channels_too(transport, sent, monkeypatch):
    """Closed without a word to sshd: behind the next key its number is another
    channel's, which a CHANNEL_CLOSE from this one would end."""
    preopen.ask(transport, 2)
    channel = preopen.claim(transport, "true")
    preopen.refused(transport)
    assert not preopen.kept(channel) and channel.closed
    monkeypatch.setattr(transport, "_send_user_message", lambda m: pytest.fail("sent"))
    channel.close()
    assert preopen.claim(transport, "true") is None  # nothing more behind a refusal


def test_a_new_attempt_drops_what_an_unanswered_one_left(transport):
    """An attempt that timed out: its channels' numbers would be the next one's."""
    preopen.ask(transport, 2)
    preopen.attempt(transport)
    assert transport.early_channels.asked == []
    assert transport._channels.values() == []


def test_a_channel_is_claimed_only_once_its_open_is_on_the_wire(transport):
    """A command's exec must not overtake its CHANNEL_OPEN (a second attempt's
    channels are asked while commands may already be waiting to claim)."""
    claims: list = []

    def send(m: paramiko.Message) -> None:
        if m.asbytes()[:1] == cMSG_CHANNEL_OPEN:  # a command comes while it goes out
            claims.append(preopen.claim(transport, "true"))

    transport._send_user_message = send
    preopen.ask(transport, 2)
    assert claims == [None, None]
    assert preopen.claim(transport, "true") is not None  # once out, it may be claimed


def test_nothing_is_guessed_once_the_login_is_answered(transport, sent, monkeypatch):
    """From then on a command may run on a confirmed channel, which an exec on a
    refused number would end with the connection: wait for the channel's answer."""
    preopen.ask(transport, 2)
    first, _ = transport.early_channels.asked[0]
    monkeypatch.setattr(transport, "is_authenticated", lambda: True)
    assert preopen.claim(transport, "true") is None
    answer(transport, first.get_id(), 0)
    assert preopen.claim(transport, "true") is first  # confirmed: no guess needed
    assert sent == [(0, "exec")]


def test_nothing_more_is_guessed_once_sshd_refused_an_early_channel(transport, sent):
    preopen.ask(transport, 3)
    _, second, third = (c for c, _ in transport.early_channels.asked)
    fail(transport, third.get_id())
    assert preopen.refusals(transport) == 1
    assert preopen.claim(transport, "true") is None  # the first: unconfirmed, not guessed
    assert sent == []


def test_a_channel_sshd_refused_is_never_claimed(transport, sent):
    preopen.ask(transport, 1)
    ((channel, _),) = transport.early_channels.asked
    fail(transport, channel.get_id())
    assert preopen.claim(transport, "true") is None
    assert preopen.take(transport, 1.0) is None  # take() drops it: the usual way
    assert sent == []


def test_a_claimed_channel_sshd_refuses_is_closed_and_leaves_no_reason(transport, sent):
    """Past MaxSessions: the caller sees it closed at once, and runs the command again."""
    preopen.ask(transport, 2)
    preopen.claim(transport, "true")
    second = preopen.claim(transport, "true")
    fail(transport, second.get_id())
    assert second.closed and second.refused
    # It stands (its login was not refused): the caller waits for sshd's hang-up and
    # lowers the node's limit, instead of running the command again at once.
    assert preopen.kept(second)
    assert transport.saved_exception is None
    assert preopen.confirmed(transport) == 0


def test_nothing_to_claim_on_a_transport_never_asked(transport, sent):
    assert preopen.claim(transport, "true") is None
    assert sent == []


def test_a_claimed_channel_stands_when_the_connection_dies_after_the_login(transport, sent):
    """paramiko unmaps every channel of a dead connection: that is no refused
    login, and the command may have run (its result may be in the channel)."""
    preopen.ask(transport, 1)
    channel = preopen.claim(transport, "true")
    transport._channels.delete(channel.get_id())
    assert preopen.kept(channel)
