"""The pipelined public-key login against the lab's real OpenSSH sshd."""

from __future__ import annotations

import functools
import io
import logging
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pctfleet.transport import early, preopen
from pctfleet.transport.auth import PipelinedTransport
from pctfleet.transport.hostkeys import enforce
from pctfleet.transport.options import ConnectOptions, connection
from pctfleet.transport.ssh import NodeConnection

pytestmark = pytest.mark.lab


class Dumped(PipelinedTransport):
    """The product's transport, with paramiko's packet log on: it names each packet
    as it is written to or read from the socket, so the log is the wire's order."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.set_hexdump(True)


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def packets(caplog: pytest.LogCaptureFixture) -> list[str]:
    """'write userauth-request', 'read service-accept', ... in the order they happened."""
    found = []
    for record in caplog.records:
        text = record.getMessage()
        for way in ("Write", "Read"):
            if text.startswith(f"{way} packet <"):
                found.append(f"{way.lower()} {text.split('<', 1)[1].split('>', 1)[0]}")
    return found


def login(info, caplog, keys: list[str]) -> list[str]:
    spec = info.nodes[0]
    conn = connection(spec.address, ConnectOptions(known_hosts=str(info.known_hosts)))
    assert conn.connect_kwargs["transport_factory"] is PipelinedTransport
    conn.connect_kwargs = {**conn.connect_kwargs, "key_filename": keys, "transport_factory": Dumped}
    conn.connect_kwargs.update(allow_agent=False, look_for_keys=False)
    enforce(conn, spec.name, str(info.known_hosts), accept_new=False)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="paramiko"):
        try:
            conn.open()
            assert conn.run("echo logged-in", hide=True, in_stream=False).stdout == "logged-in\n"
        finally:
            conn.close()
    return packets(caplog)


# Each test that reads the order of writes against sshd's answers runs with +50 ms each
# way: an answer that came back in a few microseconds could otherwise be logged by
# paramiko's reader thread between two writes the product issued back to back, and
# the log would show a wait that never happened.


def test_sshd_takes_the_signature_sent_before_its_service_accept(lab, info, caplog):
    with lab.latency(info.nodes[0].name, 50):
        wire = login(info, caplog, [str(info.identity)])
    assert wire.index("write userauth-request") < wire.index("read service-accept")
    assert wire.count("write userauth-request") == 1
    assert "read userauth-success" in wire


def test_a_refused_key_then_the_right_one_both_pipelined(lab, info, caplog, tmp_path):
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    with lab.latency(info.nodes[0].name, 50):
        wire = login(info, caplog, [str(wrong), str(info.identity)])
    assert wire.count("write userauth-request") == 2
    assert "read userauth-failure" in wire
    failure = wire.index("read userauth-failure")
    # The second attempt, too, went out before its own service-accept came back.
    second_request = wire.index("write userauth-request", failure)
    assert second_request < wire.index("read service-accept", failure)
    assert "read userauth-success" in wire


def login_with_channels(info, caplog, keys: list[str], channels: int) -> tuple[list[str], list]:
    """Log in asking for `channels` sessions behind the login; run a command on each
    channel taken, and try one more take. The wire's packets, and what each printed."""
    spec = info.nodes[0]
    conn = connection(spec.address, ConnectOptions(known_hosts=str(info.known_hosts)))
    factory = functools.partial(Dumped, channels=channels)
    conn.connect_kwargs = {**conn.connect_kwargs, "key_filename": keys}
    conn.connect_kwargs.update(transport_factory=factory, allow_agent=False, look_for_keys=False)
    enforce(conn, spec.name, str(info.known_hosts), accept_new=False)
    caplog.clear()
    printed: list = []
    with caplog.at_level(logging.DEBUG, logger="paramiko"):
        try:
            conn.open()
            for number in range(channels):
                channel = preopen.take(conn.transport, 5.0)
                channel.exec_command(f"echo channel-{number}")
                printed.append(channel.makefile("rb").read().decode())
            printed.append(preopen.take(conn.transport, 5.0))  # none left
        finally:
            conn.close()
    return packets(caplog), printed


def test_channels_asked_behind_the_login_carry_the_first_commands(lab, info, caplog):
    with lab.latency(info.nodes[0].name, 50):
        wire, printed = login_with_channels(info, caplog, [str(info.identity)], 2)
    assert printed == ["channel-0\n", "channel-1\n", None]
    assert wire.count("write channel-open") == 2
    # Both went out before sshd's answer to the login came back.
    assert wire.index("write channel-open") > wire.index("write userauth-request")
    assert wire.index("read userauth-success") > max(
        i for i, packet in enumerate(wire) if packet == "write channel-open"
    )


def test_channels_behind_a_refused_key_are_dropped_and_asked_again(info, caplog, tmp_path):
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    started = time.monotonic()
    wire, printed = login_with_channels(info, caplog, [str(wrong), str(info.identity)], 2)
    assert printed == ["channel-0\n", "channel-1\n", None]
    assert time.monotonic() - started < 4.0  # nobody waited for the dropped ones (5 s)
    failure = wire.index("read userauth-failure")
    assert wire[:failure].count("write channel-open") == 2  # behind the refused key
    assert wire[failure:].count("write channel-open") == 2  # asked again, behind the next
    assert wire.count("read channel-open-success") == 2


def test_a_node_login_on_an_early_socket_runs_its_first_commands_on_the_asked_channels(info):
    """The whole path: TCP connect and identification line first (tcp_connect), the
    login on that socket, and the node's first two commands on the two channels
    asked for behind it; the third opens one of its own."""
    spec = info.nodes[0]
    options = ConnectOptions(identity=str(info.identity), known_hosts=str(info.known_hosts))
    node = NodeConnection(spec.name, spec.address, options, adopt=False)
    connect = node._connect
    node._connect = lambda: connect(early.tcp_connect(spec.address, 22, 5.0), 2)
    try:
        for number in range(3):
            out = io.BytesIO()
            code, _ = node.exec(
                f"echo {number}", stdin=b"", timeout=30, stdout=out, stderr=io.BytesIO()
            )
            assert (code, out.getvalue()) == (0, f"{number}\n".encode())
            asked = node._slots[0].conn.transport.early_channels.asked
            assert len(asked) == max(0, 1 - number)  # taken by the commands, in turn
        assert node.connections_opened == 1
    finally:
        node.close()


def test_a_login_of_paramikos_own_socket_sends_packets_at_once(info):
    """A node connected without an early socket: paramiko made the socket, we set
    TCP_NODELAY on it once logged in."""
    spec = info.nodes[0]
    options = ConnectOptions(identity=str(info.identity), known_hosts=str(info.known_hosts))
    node = NodeConnection(spec.name, spec.address, options, adopt=False)
    try:
        node.open()
        sock = node._slots[0].conn.transport.sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        node.close()


@pytest.fixture
def rsa_key(info, tmp_path):
    """An RSA key the lab's sshd accepts for this test: its public half appended to
    the lab's authorized keys file, which is put back byte for byte afterwards."""
    key = tmp_path / "id_rsa"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(key)], check=True
    )
    authorized = Path(str(info.identity) + ".pub")
    before = authorized.read_bytes()
    authorized.write_bytes(before + b"\n" + (tmp_path / "id_rsa.pub").read_bytes())
    try:
        yield str(key)
    finally:
        authorized.write_bytes(before)


def test_an_rsa_key_signs_with_the_sha2_algorithm_sshd_named(info, caplog, rsa_key):
    """Pipelined only once EXT_INFO is read; either way sshd's own choice is signed
    with, never the SHA-1 `ssh-rsa` that OpenSSH refuses."""
    wire = login(info, caplog, [rsa_key])
    agreed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Agreed upon")]
    assert len(agreed) == 1 and "'rsa-sha2-" in agreed[0], agreed
    assert wire.count("write userauth-request") == 1
    assert "read userauth-success" in wire
