"""One SSH connection per Proxmox node, a channel per command.

Each connection is a `fabric.Connection`: Fabric resolves ssh config, builds
ProxyJump gateways and loads keys. On top of it live our host-key policy
(hostkeys.enforce), the typed outcomes, and the channel pool: a node's
connection opens lazily on the first command and is shared by every container
and thread on that node. sshd caps channels per connection (MaxSessions, 10 by
default; the inventory's `max_sessions` says otherwise). The scheduler keeps a
node within that limit; a caller past it gets a second connection rather than
failing (it reuses the first one's gateway, so a jump host sees one login).
When sshd refuses a session channel (past MaxSessions), its real cap is
lower than we were told: the node's limit drops to the channels open then and
the command waits for a free one on the same connection.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import BinaryIO

import fabric
import paramiko

from pctfleet.transport import early, preopen
from pctfleet.transport.auth import PipelinedTransport
from pctfleet.transport.base import (
    AuthFailed,
    NodeUnreachable,
    Stdin,
    TransportError,
    replayable,
)
from pctfleet.transport.channel import pump_channel
from pctfleet.transport.hostkeys import changed_key_error, enforce, known_hosts_file
from pctfleet.transport.options import ConnectOptions, ResolvedTarget, connection, resolve

# paramiko logs tracebacks of failed handshakes to stderr; we report them as typed outcomes.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


# How sshd says no to a session past MaxSessions: OpenSSH answers "open failed:
# Connect failed", other servers "administratively prohibited".
_SESSION_REFUSED = (
    paramiko.common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED,
    paramiko.common.OPEN_FAILED_CONNECT_FAILED,
)


def _session_refused(exc: Exception, slot: _Slot) -> bool:
    """Whether sshd refused a session while the connection stays up. Two refusals at
    once share paramiko's one saved exception: the other caller gets a bare
    "Unable to open channel." for the same refusal."""
    if isinstance(exc, paramiko.ChannelException):
        return exc.code in _SESSION_REFUSED
    return str(exc) == "Unable to open channel." and slot.alive()


class _Counted:
    """A sink that counts what went through it."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.count = 0

    def write(self, data: bytes) -> int:
        self.count += len(data)
        return self.sink.write(data) or len(data)


class _Slot:
    """One SSH connection and how many of its channels are in use."""

    def __init__(self, conn: fabric.Connection) -> None:
        self.conn = conn
        self.in_use = 0

    def alive(self) -> bool:
        transport = self.conn.client.get_transport()
        return transport is not None and transport.is_active()


def _set_timeouts(conn: fabric.Connection, seconds: float) -> None:
    """Our (fractional) connect timeout on every hop; Fabric's would be cut to whole seconds."""
    hop: object = conn
    while isinstance(hop, fabric.Connection):
        hop.connect_timeout = None
        for key in ("timeout", "banner_timeout", "auth_timeout", "channel_timeout"):
            hop.connect_kwargs[key] = seconds
        hop = hop.gateway


class NodeConnection:
    """All SSH traffic to one node. Thread-safe."""

    def __init__(
        self, node: str, address: str, options: ConnectOptions, *, adopt: bool = True
    ) -> None:
        self.node = node
        self.address = address
        self.target: ResolvedTarget = resolve(node, address, options)
        self.options = options
        self.connections_opened = 0
        self.max_sessions = max(1, options.max_sessions)  # lowered when sshd refuses
        self._refusals = 0  # once sshd refused, callers past its cap wait for a channel
        self._slots: list[_Slot] = []
        self._cond = threading.Condition()
        self._gateway: fabric.Connection | str | None = None
        # Why the node could not be reached: every later caller gets the same verdict at
        # once instead of waiting out its own connect timeout (one verdict per node).
        self._failure: TransportError | None = None
        # A login to this node begun early (transport/early.py): the first connect takes it.
        self._early = early.take((node, address, options)) if adopt else None
        self._flight: early.Flight | None = getattr(self._early, "flight", None)

    # -- connecting -------------------------------------------------------

    def _new_connection(self) -> fabric.Connection:
        conn = connection(self.address, self.options)
        if self._gateway is None:
            self._gateway = conn.gateway
        else:
            conn.gateway = self._gateway  # one jump login however many slots
        accept_new = self.options.accept_new_host_keys or (
            conn.ssh_config.get("stricthostkeychecking", "").lower() == "accept-new"
        )
        enforce(conn, self.node, self.options.known_hosts, accept_new)
        _set_timeouts(conn, self.options.connect_timeout)
        return conn

    def _keepalive(self, conn: fabric.Connection) -> int:
        return int(conn.ssh_config.get("serveraliveinterval", self.options.keepalive))

    def _connect(
        self,
        opened: early.Opened | None = None,
        channels: int = 0,
        flight: early.Flight | None = None,
    ) -> fabric.Connection:
        """A logged-in connection: the early one if it came, else a new login (on
        `opened`, a TCP connection to the node's own host and port, when given;
        with `channels` session channels asked for behind the login, `flight` told
        when they are out)."""
        adopted = self._adopt_early()
        if adopted is not None:
            return adopted
        target = self.target
        conn = self._new_connection()
        if opened and conn.gateway:  # reached through a gateway: not that socket's peer
            opened.close()
            opened = None
        record_file = known_hosts_file(self.options.known_hosts)
        started = opened.started if opened else time.monotonic()
        try:
            if opened:
                conn.connect_kwargs["sock"] = opened.take()  # or its connect error
                conn.connect_kwargs["transport_factory"] = functools.partial(
                    PipelinedTransport,
                    ident_sent=True,  # tcp_connect sent it
                    channels=channels,
                    flight=flight,
                )
            conn.open()
        except TransportError:
            conn.close()
            raise
        except paramiko.BadHostKeyException as exc:
            conn.close()
            raise changed_key_error(self.node, exc, record_file) from None
        except paramiko.AuthenticationException as exc:
            conn.close()
            raise AuthFailed(
                self.node,
                f"authentication failed for {target.user}@{target.hostname}:{target.port}: {exc}",
                "check --user and --identity, or load the key into ssh-agent",
            ) from None
        except (OSError, paramiko.SSHException, EOFError) as exc:
            conn.close()
            timed_out = time.monotonic() - started >= self.options.connect_timeout * 0.9
            raise self._unreachable(exc, timed_out) from None
        conn.transport.set_keepalive(self._keepalive(conn))
        early.no_delay(conn.transport.sock)  # paramiko's own socket, when it made one
        self.connections_opened += 1
        return conn

    def _adopt_early(self) -> fabric.Connection | None:
        """The early login's connection (waiting for it to finish), or None; its
        error is this connect's error."""
        future, self._early = self._early, None
        conn = future.result() if future is not None else None
        if conn is not None:
            conn.transport.set_keepalive(self._keepalive(conn))
            self.connections_opened += 1
        return conn

    def hand_over(self) -> None:
        """Done with the node for now: its idle connection waits for the command's
        next user of the node (early.give); anything else closes."""
        with self._cond:
            idle = [s for s in self._slots if not s.in_use and s.alive()]
            if len(self._slots) == 1 and idle and self._gateway is None:
                key = (self.node, self.address, self.options)
                if early.give(key, idle[0].conn):
                    self._slots.clear()
        self.close()

    def _unreachable(self, exc: BaseException, timed_out: bool = False) -> NodeUnreachable:
        target = self.target
        detail = str(exc) or type(exc).__name__
        if timed_out or isinstance(exc, socket.timeout | TimeoutError) or "banner" in detail:
            detail = f"no SSH answer within {self.options.connect_timeout:g}s ({detail})"
        return NodeUnreachable(
            self.node,
            f"cannot reach {target.hostname}:{target.port}: {detail}",
            "check the address, the port and that sshd runs on the node",
        )

    # -- channel slots ----------------------------------------------------

    def _acquire(self) -> _Slot:
        """A connection with a free channel. Past the cap a new connection opens, unless
        sshd has refused a channel: then the caller waits for a free one."""
        with self._cond:
            while True:
                self._slots = [s for s in self._slots if s.alive() or s.in_use]
                for slot in self._slots:
                    if slot.in_use < self.max_sessions and slot.alive():
                        slot.in_use += 1
                        return slot
                if self._refusals and any(s.alive() for s in self._slots):
                    self._cond.wait()
                    continue
                if self._failure is not None and not any(s.alive() for s in self._slots):
                    failure = self._failure
                    raise type(failure)(failure.where, failure.message, failure.hint)
                # Every live connection is at the node's session cap: open another.
                try:
                    slot = _Slot(self._connect())
                except TransportError as exc:
                    if not any(s.alive() for s in self._slots):
                        self._failure = exc
                    raise
                slot.in_use = 1
                self._slots.append(slot)
                return slot

    def open(self) -> None:
        """Log in now rather than at the first command (the connection keeper's way)."""
        self._release(self._acquire())

    def alive(self) -> bool:
        """Whether a logged-in connection to the node is up."""
        with self._cond:
            return any(slot.alive() for slot in self._slots)

    def _refused(self, slot: _Slot) -> bool:
        """sshd refused a channel on `slot`: its cap is the channels open there now.
        False when nothing else was open: then channels are refused outright."""
        with self._cond:
            others = slot.in_use - 1
            if others < 1:
                return False
            self._lower_limit(others)  # the condition's lock is reentrant
            return True

    def _release(self, slot: _Slot) -> None:
        with self._cond:
            slot.in_use -= 1
            self._cond.notify_all()

    # -- running ----------------------------------------------------------

    def exec(
        self,
        command: str,
        *,
        stdin: Stdin,
        timeout: float | None,
        stdout: BinaryIO,
        stderr: BinaryIO,
        opened: Callable[[paramiko.Channel], None] | None = None,
        read_only: bool = False,
    ) -> tuple[int, float]:
        """Run a node shell command line; stream its output; return (exit, seconds).
        `opened` is called with the channel before the command starts; if it raises,
        the channel closes and the command never runs (the connection keeper's way).
        `read_only`: the command changes nothing, so it may ride behind the login
        (preopen.claim) and run again if sshd dropped that connection."""
        started = time.monotonic()
        if read_only and replayable(stdin) and opened is None:
            code = self._exec_early(command, stdin, timeout, stdout, stderr)
            if code is not None:
                return code, time.monotonic() - started
        channel, slot = self._open_channel()
        try:
            if opened is not None:
                try:
                    opened(channel)
                except BaseException:
                    channel.close()
                    raise
            limit = timeout if timeout is not None else self.options.command_timeout
            code = pump_channel(channel, command, stdin, limit, stdout, stderr, self.node)
        finally:
            self._release(slot)
        return code, time.monotonic() - started

    def _exec_early(
        self, command: str, stdin: Stdin, timeout: float | None, stdout: BinaryIO, stderr: BinaryIO
    ) -> int | None:
        """Run a read-only command on a channel of the early login, its exec sent
        before sshd has answered the login; None when it did not run that way (then
        it runs as usual). Waits for the login only once the exec is out."""
        flight, wait = self._flight, self.options.connect_timeout
        transport = flight.wait(wait) if flight is not None else None
        channel = preopen.claim(transport, command) if transport is not None else None
        if channel is None:
            return None
        slot = self._acquire()  # the login's outcome: its error is this command's
        try:
            if slot.conn.transport is not transport or not preopen.kept(channel):
                return None  # that login attempt was refused: sshd never read the exec
            if not getattr(channel, "refused", False):  # by sshd, past MaxSessions
                code = self._pump_claimed(channel, command, stdin, timeout, stdout, stderr)
                if code is not None:
                    return code
            # sshd hangs up at an exec sent on a channel it refused: wait for that,
            # so the command runs again on a new login, within the channels it opened.
            transport.join(1.0)
            if preopen.refusals(transport):
                self._lower_limit(preopen.confirmed(transport))
            return None
        finally:
            self._release(slot)

    def _pump_claimed(
        self,
        channel: paramiko.Channel,
        command: str,
        stdin: Stdin,
        timeout: float | None,
        stdout: BinaryIO,
        stderr: BinaryIO,
    ) -> int | None:
        """A claimed channel's command to its end; None when sshd hung up before a
        byte came back (at another claimed channel's exec: this one may run again)."""
        out, err = _Counted(stdout), _Counted(stderr)
        limit = timeout if timeout is not None else self.options.command_timeout
        try:
            return pump_channel(channel, command, stdin, limit, out, err, self.node, True)
        except NodeUnreachable:
            if getattr(channel, "refused", False):
                return None  # refused while pumping: it never ran
            transport = channel.get_transport()
            transport.join(1.0)  # the connection's end, if that is what this was
            if out.count or err.count or transport.is_active():
                raise
            return None

    def _lower_limit(self, sessions: int) -> None:
        """sshd opened only `sessions` channels at once: keep within that from now on."""
        with self._cond:
            self.max_sessions = max(1, min(self.max_sessions, sessions))
            self._refusals += 1

    def _open_channel(self) -> tuple[paramiko.Channel, _Slot]:
        """A session channel and the slot it holds; a refused one is retried."""
        alone = 0  # refusals while no other channel of ours was open
        while True:
            slot = self._acquire()
            try:
                transport, timeout = slot.conn.transport, self.options.connect_timeout
                channel = preopen.take(transport, timeout)  # one asked for at login
                return channel or transport.open_session(timeout=timeout), slot
            except paramiko.SSHException as exc:
                refused = _session_refused(exc, slot)
                lowered = refused and self._refused(slot)
                self._release(slot)
                if refused and not lowered and alone < 20:
                    # sshd frees a closed session a moment after our close: try again soon.
                    alone += 1
                    time.sleep(0.1)
                elif not lowered:
                    raise self._unreachable(exc) from None
            except (EOFError, OSError) as exc:
                self._release(slot)
                raise self._unreachable(exc) from None

    def close(self) -> None:
        if self._early is not None:  # never taken: close it once its login ends
            future, self._early = self._early, None
            if not future.cancel():
                future.add_done_callback(early.close_result)
        with self._cond:
            for slot in self._slots:
                slot.conn.close()
            self._slots.clear()
        hop = self._gateway
        while isinstance(hop, fabric.Connection):
            hop.close()
            hop = hop.gateway


class NodePool:
    """NodeConnections by node name, created on first use."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeConnection] = {}
        self._lock = threading.Lock()

    def get(self, node: str, address: str, options: ConnectOptions) -> NodeConnection:
        with self._lock:
            conn = self._nodes.get(node)
            if conn is None:
                conn = self._nodes[node] = NodeConnection(node, address, options)
            return conn

    def connections_opened(self) -> dict[str, int]:
        return {name: conn.connections_opened for name, conn in self._nodes.items()}

    def connections_reused(self) -> dict[str, int]:
        """Kept logins used, by node: none here (transport/keep.py's pool has them)."""
        return dict.fromkeys(self._nodes, 0)

    def close(self) -> None:
        for conn in self._nodes.values():
            conn.close()


def early_login(
    node: str,
    address: str,
    options: ConnectOptions,
    port: int,
    opened: early.Opened,
    channels: int = 0,
    flight: early.Flight | None = None,
) -> fabric.Connection | None:
    """Log in on an early TCP connection when Fabric resolves the node to that very
    host and port; else close it and return None (the node connects as usual).
    `channels`: how many commands the run will start on the node at first."""
    login = NodeConnection(node, address, options, adopt=False)
    if (login.target.hostname, login.target.port) != (address, port):
        opened.close()
        return None
    return login._connect(opened, min(channels, login.max_sessions), flight)
