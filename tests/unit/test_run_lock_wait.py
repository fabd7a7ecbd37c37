"""A run that waits for another run's lock says whose lock, since when, until when."""

from __future__ import annotations

import time

import pytest

from pctfleet.run.lock import RunLock
from pctfleet.transport.base import Target


class Busy(Target):
    """A container whose lock is held: answers from `holders` in turn, then grants it."""

    def __init__(self, holders: list[str]) -> None:
        self.name = "pve1/200"
        self.holders = list(holders)

    def _run(self, argv, stdin, timeout, sinks, **_kw):  # noqa: ANN001, ANN202, ARG002
        if not self.holders:
            return 0, 0.0
        line = self.holders.pop(0)
        sinks.err().write(f"pctfleet-lock-busy run {line}\n".encode())
        return 75, 0.0


def _line(run: str, until: int, since: int | str = "?") -> str:
    return f"{run} by ctl-a (lease until {until}, pid 4242, since {since})"


def _clock(epoch: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


@pytest.fixture(autouse=True)
def no_pauses(monkeypatch):
    monkeypatch.setattr("pctfleet.run.lock.time.sleep", lambda seconds: None)


def test_waiting_names_the_holder_since_when_and_until_when():
    now = int(time.time())
    renewed = [_line("r-dead", now + 40, now - 20), _line("r-dead", now + 55, now - 20)]
    told: list[str] = []
    lock = RunLock(Busy(renewed), "r-me", wait=30, notify=told.append)
    assert lock.acquire() is True and lock.held
    assert len(told) == 1, told  # a lease renewal is no news
    message = told[0]
    assert message.startswith("pve1/200: waiting for the lock of run r-dead (from ctl-a")
    assert f"held since {_clock(now - 20)}" in message
    assert f"lease until {_clock(now + 40)}" in message
    assert "giving up in 30s" in message or "giving up in 29s" in message


def test_a_new_holder_is_said_again_and_an_old_holder_file_still_reads():
    now = int(time.time())
    old_format = f"r-old by ctl-b (lease until {now + 5}, pid 7)"
    told: list[str] = []
    lock = RunLock(Busy([_line("r-1", now + 9), old_format]), "r-me", notify=told.append)
    lock.acquire()
    assert [m.split(" (")[0] for m in told] == [
        "pve1/200: waiting for the lock of run r-1",
        "pve1/200: waiting for the lock of run r-old",
    ]
    assert "held since" not in told[0] and f"lease until {_clock(now + 9)}" in told[0]


def test_no_message_when_the_lock_is_free():
    told: list[str] = []
    assert RunLock(Busy([]), "r-me", notify=told.append).acquire() is False
    assert told == []
