"""The login's pipelining against OpenSSH 10 (Debian 13, Proxmox VE 9 nodes): the
signed request behind the service request and the session channels behind the
login, with the right key and behind a refused one."""

from __future__ import annotations

import functools
import gc
import io
import os
import subprocess
import time

import pytest
from openssh10 import ADDRESS, PORT, Sshd, ensure_root

from pctfleet.transport import early, preopen
from pctfleet.transport.auth import PipelinedTransport
from pctfleet.transport.hostkeys import enforce
from pctfleet.transport.options import ConnectOptions, connection
from pctfleet.transport.ssh import NodeConnection

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """The running sshd and the key it takes (no lab node: its own address)."""
    if os.geteuid() != 0:
        pytest.skip("chroot and mount namespaces need root")
    keys = tmp_path_factory.mktemp("openssh10")
    identity = keys / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(identity)], check=True)
    running = Sshd(ensure_root(), identity.with_suffix(".pub"), keys / "known_hosts")
    yield running, identity
    running.stop()


def node_runs(options: ConnectOptions, commands: int, channels: int) -> tuple[list, NodeConnection]:
    """Log in on an early socket asking for `channels`; run `commands` commands one
    after the other; (the early channels left after each, the node)."""
    node = NodeConnection("pve9", ADDRESS, options, adopt=False)
    connect = node._connect
    node._connect = lambda: connect(early.tcp_connect(ADDRESS, PORT, 5.0), channels)
    left = []
    for number in range(commands):
        out, err = io.BytesIO(), io.BytesIO()
        code, _ = node.exec(f"echo {number}", stdin=b"", timeout=30, stdout=out, stderr=err)
        assert (code, out.getvalue()) == (0, f"{number}\n".encode())
        left.append(len(node._slots[0].conn.transport.early_channels.asked))
    return left, node


def test_it_is_openssh_10(sshd):
    running, _ = sshd
    assert running.version().startswith("SSH-2.0-OpenSSH_10.")


def test_commands_take_the_channels_asked_behind_the_login(sshd):
    running, identity = sshd
    options = ConnectOptions(
        identity=str(identity), known_hosts=str(running.known_hosts), port=PORT
    )
    left, node = node_runs(options, commands=3, channels=2)
    try:
        assert left == [1, 0, 0]
        assert "OpenSSH_10" in node._slots[0].conn.transport.remote_version
    finally:
        node.close()


def test_a_refused_key_then_the_right_one_with_channels(sshd, tmp_path, monkeypatch):
    """The wrong key first (paramiko tries key files in order): sshd refuses it,
    the channels asked behind it are dropped, and those asked behind the right
    key carry the commands."""
    running, identity = sshd
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    refusals = []
    dropping = preopen.refused
    monkeypatch.setattr(preopen, "refused", lambda t: (refusals.append(t), dropping(t)))
    conn = connection(ADDRESS, ConnectOptions(known_hosts=str(running.known_hosts), port=PORT))
    conn.connect_kwargs = {**conn.connect_kwargs, "key_filename": [str(wrong), str(identity)]}
    factory = functools.partial(PipelinedTransport, channels=2)
    conn.connect_kwargs.update(transport_factory=factory, allow_agent=False, look_for_keys=False)
    enforce(conn, "pve9", str(running.known_hosts), accept_new=False)
    started = time.monotonic()
    try:
        conn.open()
        assert len(refusals) == 1  # the wrong key was offered, and refused
        for number in range(2):
            channel = preopen.take(conn.transport, 5.0)
            channel.exec_command(f"echo {number}")
            assert channel.makefile("rb").read() == f"{number}\n".encode()
        assert preopen.take(conn.transport, 5.0) is None
    finally:
        conn.close()
    assert time.monotonic() - started < 4.0  # nobody waited for the dropped ones (5 s)


class Claiming:
    """A flight that claims at once, in the login's own thread: each attempt's
    channels carry a command before sshd has answered that attempt."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.claimed: list[tuple[int, int, object]] = []  # (attempt, n, channel)
        self.attempts = 0

    def ready(self, transport=None) -> None:  # noqa: ANN001
        if transport is None:
            return
        for n in range(2):
            command = f"touch /tmp/{self.token}-{self.attempts}-{n}; echo {n}"
            self.claimed.append((self.attempts, n, preopen.claim(transport, command)))
        self.attempts += 1


def test_read_only_commands_ride_behind_each_attempt_and_run_only_behind_the_right_key(
    sshd, tmp_path
):
    """sshd-auth answers an exec sent behind a refused key with UNIMPLEMENTED, as
    it does the channel: the command never runs and the login goes on; behind
    the right key, sshd-session runs it on the channel numbered as we guessed."""
    running, identity = sshd
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    flight = Claiming(f"claimed-{os.getpid()}-{time.monotonic_ns()}")
    conn = connection(ADDRESS, ConnectOptions(known_hosts=str(running.known_hosts), port=PORT))
    conn.connect_kwargs = {**conn.connect_kwargs, "key_filename": [str(wrong), str(identity)]}
    factory = functools.partial(PipelinedTransport, channels=2, flight=flight)
    conn.connect_kwargs.update(transport_factory=factory, allow_agent=False, look_for_keys=False)
    enforce(conn, "pve9", str(running.known_hosts), accept_new=False)
    try:
        conn.open()
        assert [(a, n) for a, n, ch in flight.claimed if ch is not None] == [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
        ]
        for attempt, _, channel in flight.claimed:
            assert preopen.kept(channel) == (attempt == 1)
        # The dropped ones go first, as a caller's would: nothing of theirs may
        # reach the channels that now bear their numbers.
        flight.claimed = [claim for claim in flight.claimed if claim[0] == 1]
        gc.collect()
        for _, n, channel in flight.claimed:
            assert channel.makefile("rb").read() == f"{n}\n".encode()
            assert channel.recv_exit_status() == 0
    finally:
        conn.close()
    ran = sorted(p.name for p in (running.root / "tmp").glob(f"{flight.token}-*"))
    assert ran == [f"{flight.token}-1-0", f"{flight.token}-1-1"]
