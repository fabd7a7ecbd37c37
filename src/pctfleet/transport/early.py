"""Logins started as soon as the inventory is known, taken over by the run later.

A command knows its nodes long before it sends the first `pct exec`: the
playbook still has to load and render for every container. Meanwhile a few
background threads open a TCP connection to each node (plain sockets: no
paramiko yet), then log in on it with the usual policy (host keys, auth). The
run's NodeConnection for that node takes the logged-in connection instead of
connecting (`take`); discovery hands its connection back for the run (`give`).

Only a destination that is certain without Fabric's resolution gets a socket
early: nothing in ssh_options or the ssh config files may say HostName, Port,
ProxyJump, ProxyCommand, Include (of a file that exists) or Match. Then the
login itself checks that Fabric resolved the same host and port, no gateway.
Errors are not judged here: the early login raises the NodeConnection's own
typed errors, and the run's first command on the node re-raises them.

Nothing here imports paramiko: the ssh module is loaded by the worker threads
once their TCP connect is under way.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import queue
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pctfleet import __version__
from pctfleet.transport.options import SSH_CONFIG, SYSTEM_SSH_CONFIG, ConnectOptions

if TYPE_CHECKING:
    import fabric

AT_ONCE = 16  # logins in flight: each costs CPU (kex) on the controller
# Keywords that may move the destination away from (address, port) or need ssh's
# own evaluation: with any of them the node connects as it always did.
MOVES_DESTINATION = frozenset({"hostname", "port", "proxyjump", "proxycommand", "include", "match"})
# Our SSH identification line (RFC 4253 4.2). tcp_connect sends it the moment TCP
# connects: sshd sends its KEXINIT only after reading it, so that is on its way
# while paramiko still loads (PipelinedTransport then skips its own write).
IDENT = f"SSH-2.0-pctfleet_{__version__}"
IDENT_LINE = f"{IDENT}\r\n".encode()


@dataclass
class Opened:
    """A TCP connection made early, or why it failed (raised where paramiko would)."""

    started: float
    sock: socket.socket | None = None
    error: OSError | None = None

    def take(self) -> socket.socket:
        if self.error is not None:
            raise self.error
        assert self.sock is not None
        sock, self.sock = self.sock, None
        return sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


Key = tuple[str, str, ConnectOptions]


class Flight:
    """The transport of an early login once its session channels are on the wire
    (behind the login request, transport/preopen.py), before sshd has answered: a
    read-only first command may go right behind them. None when the login asked
    for none, or ended first."""

    def __init__(self) -> None:
        self._landed = threading.Event()
        self.transport: Any = None

    def ready(self, transport: Any = None) -> None:  # noqa: ANN401 - paramiko.Transport
        """The channels are out (`transport`), or none will be (None); first call wins."""
        if not self._landed.is_set():
            self.transport = transport
            self._landed.set()

    def wait(self, timeout: float) -> Any:  # noqa: ANN401 - paramiko.Transport or None
        return self.transport if self._landed.wait(timeout) else None


class Login(Future):
    """An early login in flight: its result is what `take` documents."""

    def __init__(self) -> None:
        super().__init__()
        self.flight = Flight()


# -- when: the destination is certain -----------------------------------------


def _config_lines(path: Path) -> Iterable[tuple[str, str]]:
    """(keyword, value) of every setting in an ssh config file; an Include is kept
    only when it names a file that exists (ssh's relative paths: ~/.ssh, /etc/ssh)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    base = SYSTEM_SSH_CONFIG.parent if path == SYSTEM_SSH_CONFIG else SSH_CONFIG.parent
    for raw in text.splitlines():
        words = raw.strip().replace("=", " ", 1).split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        keyword, value = words[0].lower(), (words[1] if len(words) > 1 else "").strip()
        if keyword != "include":
            yield keyword, value
            continue
        for pattern in value.split():
            full = Path(pattern).expanduser()
            full = full if full.is_absolute() else base.expanduser() / full
            yield from (("include", found) for found in glob.glob(str(full)))


def early_port(options: ConnectOptions) -> int | None:
    """The port to open early, or None when only Fabric's resolution can say where
    the node is (then the node connects as it always did)."""
    if any(key.lower() in MOVES_DESTINATION for key, _ in options.ssh_options):
        return None
    if options.ssh_config:
        files = [Path(options.ssh_config).expanduser()]
    else:
        files = [SSH_CONFIG.expanduser(), SYSTEM_SSH_CONFIG]
    for path in files:
        if any(keyword in MOVES_DESTINATION for keyword, _ in _config_lines(path)):
            return None
    return options.port or 22


def no_delay(sock: object) -> None:
    """Send each SSH packet at once (TCP_NODELAY). paramiko writes a packet per
    send() call, often two back to back (NEWKEYS then the service request, data
    then EOF); Nagle holds the second until the first is acknowledged, which a
    peer's delayed ACK puts off by up to 40 ms, and by a round trip on a slow link."""
    if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
        # A socket closed under us (sshd hung up) raises: its next use reports that.
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def tcp_connect(address: str, port: int, timeout: float) -> Opened:
    """paramiko's own connect loop (SSHClient.connect), so a failure is the same
    exception: refused/unreachable on every address is NoValidConnectionsError."""
    opened = Opened(time.monotonic())
    errors: dict = {}
    try:
        infos = socket.getaddrinfo(address, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        addresses = [(i[0], i[4]) for i in infos if i[1] == socket.SOCK_STREAM] or [
            (i[0], i[4]) for i in infos
        ]
        for family, addr in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            no_delay(sock)
            sock.settimeout(timeout)
            try:
                sock.connect(addr)
                sock.sendall(IDENT_LINE)
                opened.sock = sock
                return opened
            except OSError as exc:
                sock.close()
                if exc.errno not in (errno.ECONNREFUSED, errno.EHOSTUNREACH):
                    raise
                errors[addr] = exc
        opened.error = ssh_module().paramiko.ssh_exception.NoValidConnectionsError(errors)
    except OSError as exc:
        opened.error = exc
    return opened


_import_lock = threading.Lock()


def ssh_module() -> Any:  # noqa: ANN401 - the module
    """pctfleet.transport.ssh (with paramiko and Fabric), imported by one thread at a
    time: two threads importing paramiko at once can leave it half-initialised."""
    with _import_lock:
        from pctfleet.transport import ssh

        return ssh


# -- the logins in flight, by (node, address, options) ------------------------

_lock = threading.Lock()
_pending: dict[Key, Future] = {}
_enabled = False  # while a command that started early logins runs
STARTED = [0]  # early logins started in this process (tests and benchmarks read it)


def start(nodes: Iterable[Key], channels: Mapping[Key, int] | None = None) -> int:
    """Begin logging in to these nodes in the background; how many were started.
    `channels`: the commands the run will start on each node at first, whose
    session channels are asked for behind the login (transport/preopen.py)."""
    global _enabled
    jobs: queue.SimpleQueue = queue.SimpleQueue()
    count = 0
    with _lock:
        _enabled = True
        for key in nodes:
            port = early_port(key[2])
            if port is None or key in _pending:
                continue
            future = Login()
            _pending[key] = future
            jobs.put((key, port, future, (channels or {}).get(key, 0)))
            count += 1
        STARTED[0] += count
    if count:
        # paramiko loads while the TCP handshakes and sshd's banners are in flight:
        # with 50 ms each way that is a round trip off every early login.
        threading.Thread(target=ssh_module, name="pctfleet-ssh-import", daemon=True).start()
    for _ in range(min(AT_ONCE, count)):
        threading.Thread(target=_work, args=(jobs,), name="pctfleet-early", daemon=True).start()
    return count


def _work(jobs: queue.SimpleQueue) -> None:
    while True:
        try:
            key, port, future, channels = jobs.get_nowait()
        except queue.Empty:
            return
        if not future.set_running_or_notify_cancel():
            future.flight.ready(None)
            continue  # the run connected itself, or the command ended
        try:
            future.set_result(_login(key, port, channels, future.flight))
        except Exception as exc:  # the node's typed error, re-raised by the run
            future.set_exception(exc)
        finally:
            future.flight.ready(None)  # no channels came of it, or they are out already


def _login(
    key: Key, port: int, channels: int = 0, flight: Flight | None = None
) -> fabric.Connection | None:
    name, address, options = key
    opened = tcp_connect(address, port, options.connect_timeout)
    return ssh_module().early_login(name, address, options, port, opened, channels, flight)


def take(key: Key) -> Future | None:
    """The early login to this node, if one was started: its result is a logged-in
    connection, None (connect as usual) or the node's error. One still queued is
    dropped: connecting now is sooner than waiting behind other nodes."""
    with _lock:
        future = _pending.pop(key, None)
    if future is None or future.cancel():
        return None
    return future


def give(key: Key, conn: Any) -> bool:  # noqa: ANN401 - fabric.Connection
    """Keep a logged-in idle connection for the command's next user of the node.
    False when no command is collecting them: the caller closes it."""
    with _lock:
        if not _enabled or key in _pending:
            return False
        done: Future = Future()
        done.set_result(conn)
        _pending[key] = done
        return True


def close_all() -> None:
    """The command is over: close every connection nobody took, now or once its
    login ends, and keep no more."""
    global _enabled
    with _lock:
        _enabled = False
        left = list(_pending.values())
        _pending.clear()
    for future in left:
        if not future.cancel():
            future.add_done_callback(close_result)


def close_result(future: Future) -> None:
    """Close what a finished early login left (nothing when it failed)."""
    if future.exception() is None and future.result() is not None:
        future.result().close()
