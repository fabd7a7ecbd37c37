"""Early logins: when a node's socket may be opened before Fabric resolves it, and
how the run's connection takes (or leaves) what was opened."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import Future

import pytest

from pctfleet.inventory.model import Container, Node
from pctfleet.transport import early, ssh
from pctfleet.transport.base import NodeUnreachable
from pctfleet.transport.connections import node_options, start_logins
from pctfleet.transport.options import ConnectOptions


def opts(tmp_path, text: str = "", **extra) -> ConnectOptions:
    config = tmp_path / "ssh_config"
    config.write_text(text)
    return ConnectOptions(ssh_config=str(config), **extra)


@pytest.fixture(autouse=True)
def fresh_registry():
    early.close_all()
    yield
    early.close_all()


def test_plain_node_connects_early_on_its_port(tmp_path):
    assert early.early_port(opts(tmp_path)) == 22
    assert early.early_port(opts(tmp_path, port=2222)) == 2222
    assert early.early_port(opts(tmp_path, "Host *\n  User admin\n  IdentityFile ~/k\n")) == 22


@pytest.mark.parametrize(
    "line",
    [
        "HostName 127.0.0.9",
        "Port 2200",
        "ProxyJump jump",
        "ProxyCommand nc %h %p",
        "Match host pve*",
        "  hostname=127.0.0.9",  # any case, '=' form, indented
    ],
)
def test_config_that_may_move_the_destination_connects_as_usual(tmp_path, line):
    assert early.early_port(opts(tmp_path, f"Host pve1\n{line}\n")) is None


@pytest.mark.parametrize("key", ["HostName", "Port", "ProxyJump", "ProxyCommand", "port"])
def test_inventory_ssh_options_that_move_the_destination_connect_as_usual(tmp_path, key):
    assert early.early_port(opts(tmp_path, ssh_options=((key, "x"),))) is None
    assert early.early_port(opts(tmp_path, ssh_options=(("ServerAliveInterval", "5"),))) == 22


def test_include_counts_only_when_it_names_a_file(tmp_path):
    assert early.early_port(opts(tmp_path, f"Include {tmp_path}/none/*.conf\n")) == 22
    (tmp_path / "more.conf").write_text("User x\n")
    assert early.early_port(opts(tmp_path, f"Include {tmp_path}/*.conf\n")) is None


def test_comments_are_not_settings(tmp_path):
    assert early.early_port(opts(tmp_path, "# ProxyJump jump\n#Port 2\n")) == 22


def test_tcp_failure_is_paramikos_exception(tmp_path):
    """Refused is NoValidConnectionsError, as paramiko's own connect raises it."""
    from paramiko.ssh_exception import NoValidConnectionsError

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]  # bound, not listening: refused
        opened = early.tcp_connect("127.0.0.1", port, 2.0)
    assert isinstance(opened.error, NoValidConnectionsError)
    with pytest.raises(NoValidConnectionsError):
        opened.take()


def test_early_socket_sends_each_packet_at_once():
    """TCP_NODELAY: paramiko writes packets one send() at a time, back to back."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        opened = early.tcp_connect("127.0.0.1", listener.getsockname()[1], 2.0)
        sock = opened.take()
        with sock:
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_no_delay_leaves_other_sockets_alone():
    with socket.socket(socket.AF_UNIX) as unix:
        early.no_delay(unix)  # a ProxyJump's channel or a unix socket: nothing to set
    early.no_delay(object())
    closed = socket.socket()
    closed.close()
    early.no_delay(closed)  # a socket sshd's hang-up closed: no error of its own


def test_early_error_is_the_runs_error_for_that_node(tmp_path):
    """A refused early connect surfaces, on the run's first command, exactly as the
    run's own connect would have said it (unreachable, same message)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        options = opts(tmp_path, port=port, connect_timeout=2.0)
        with pytest.raises(NodeUnreachable) as today:
            ssh.NodeConnection("pve1", "127.0.0.1", options)._connect()
        assert early.start([("pve1", "127.0.0.1", options)]) == 1
        node = ssh.NodeConnection("pve1", "127.0.0.1", options)
        assert node._early is not None
        with pytest.raises(NodeUnreachable) as now:
            node._connect()
    assert str(now.value) == str(today.value)


def test_start_logins_once_per_node_and_not_for_moved_nodes(tmp_path, monkeypatch):
    logins: list[tuple[str, int]] = []
    ended = threading.Event()

    def login(key, port, channels, flight=None):
        logins.append((key[0], channels))
        ended.set()

    monkeypatch.setattr(early, "_login", login)
    plain = Node("pve1", "127.0.0.1")
    moved = Node("pve2", "127.0.0.2", ssh_options={"ProxyJump": "jump"})
    cts = [Container(plain, 200), Container(plain, 201), Container(moved, 300)]
    assert start_logins(cts, opts(tmp_path)) == 1
    assert ended.wait(5)
    assert logins == [("pve1", 2)]  # a channel asked for each of its containers


def test_an_early_login_asks_for_no_more_channels_than_the_node_allows(tmp_path, monkeypatch):
    asked: list[int] = []
    connect = lambda self, opened, n, flight: asked.append(n)  # noqa: E731
    monkeypatch.setattr(ssh.NodeConnection, "_connect", connect)
    options = opts(tmp_path, max_sessions=4)
    for wanted in (3, 12):
        ssh.early_login("pve1", "127.0.0.1", options, 22, early.Opened(0.0), wanted)
    assert asked == [3, 4]


def test_the_identification_line_goes_out_as_tcp_connects():
    """Before paramiko has loaded: sshd sends its KEXINIT only once it has read it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        opened = early.tcp_connect("127.0.0.1", listener.getsockname()[1], 2.0)
        peer, _ = listener.accept()
        with peer, opened.take():
            peer.settimeout(2.0)
            assert peer.recv(100) == early.IDENT_LINE
    assert early.IDENT.startswith("SSH-2.0-pctfleet_") and " " not in early.IDENT
    assert f"{early.IDENT}\r\n".encode() == early.IDENT_LINE


def test_run_takes_the_early_login_and_never_connects_itself(tmp_path):
    options = opts(tmp_path)
    key = ("pve1", "127.0.0.1", node_options(Node("pve1", "127.0.0.1"), options))
    conn = FakeConn()
    assert early.start([]) == 0  # a command is collecting logins
    assert early.give(key, conn)
    node = ssh.NodeConnection(*key)
    assert node._connect() is conn
    assert node.connections_opened == 1
    assert ssh.NodeConnection(*key)._early is None  # taken once


def test_untaken_logins_close_when_the_command_ends(tmp_path):
    done, running = FakeConn(), FakeConn()
    finish: Future = Future()
    early.start([])
    early.give(("a", "127.0.0.1", ConnectOptions()), done)
    finish.set_running_or_notify_cancel()
    early._pending[("b", "127.0.0.1", ConnectOptions())] = finish
    early.close_all()
    assert done.closed and not running.closed
    finish.set_result(running)  # the login ends after the command did
    assert running.closed
    assert not early.give(("c", "127.0.0.1", ConnectOptions()), FakeConn())


def test_a_queued_login_is_dropped_when_the_run_needs_the_node_first():
    queued: Future = Future()
    early._pending[("a", "127.0.0.1", ConnectOptions())] = queued
    assert early.take(("a", "127.0.0.1", ConnectOptions())) is None
    assert queued.cancelled()


class FakeConn:
    def __init__(self) -> None:
        self.closed = False
        self.transport = self
        self.ssh_config: dict = {}
        self.lock = threading.Lock()

    def set_keepalive(self, seconds: int) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_paramiko_loads_while_the_tcp_handshake_is_in_flight(tmp_path, monkeypatch):
    # The import must not wait for the connect: under latency the handshake is a round trip.
    handshake_done, imported_during = threading.Event(), []
    real_import = early.ssh_module

    def slow_connect(address, port, timeout):
        handshake_done.wait(10)
        return early.Opened(0.0, error=OSError("refused"))

    def ssh_module():
        imported_during.append(not handshake_done.is_set())
        return real_import()

    monkeypatch.setattr(early, "tcp_connect", slow_connect)
    monkeypatch.setattr(early, "ssh_module", ssh_module)
    early.start([("pve1", "127.0.0.1", opts(tmp_path))])
    for _ in range(100):  # a second at most, while the handshake is held open
        if imported_during:
            break
        threading.Event().wait(0.01)
    handshake_done.set()
    assert imported_during[:1] == [True]


def test_a_flight_is_told_once_and_a_waiter_is_never_left_hanging():
    flight = early.Flight()
    assert flight.wait(0.05) is None  # not yet: the caller goes the usual way
    flight.ready("transport")
    flight.ready(None)  # the login's end, later: the first word stands
    assert flight.wait(0.0) == "transport"


def test_a_failed_early_login_releases_its_flight(tmp_path, monkeypatch):
    """A read-only command waiting to ride behind the login learns at once that none
    will come, instead of waiting out the connect timeout."""

    running, go = threading.Event(), threading.Event()

    def login(key, port, channels, flight=None):
        running.set()
        go.wait(5.0)
        raise OSError("refused")

    monkeypatch.setattr(early, "_login", login)
    key = ("pve1", "127.0.0.1", opts(tmp_path))
    try:
        assert early.start([key]) == 1
        assert running.wait(5.0)
        future = early.take(key)
        go.set()
        started = time.monotonic()
        assert future.flight.wait(5.0) is None
        assert time.monotonic() - started < 2.0
        assert isinstance(future.exception(5.0), OSError)
    finally:
        early.close_all()
