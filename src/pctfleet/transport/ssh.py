"""One SSH connection per Proxmox node, a channel per command.

A node's connection opens lazily on the first command and is shared by every
container and thread on that node. sshd caps channels per connection
(MaxSessions, 10 by default), so past the cap a second connection is opened
rather than failing.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import BinaryIO

import paramiko

from pctfleet.transport.base import AuthFailed, NodeUnreachable, Stdin, TransportError
from pctfleet.transport.channel import pump_channel
from pctfleet.transport.hostkeys import (
    AcceptNew,
    RefuseUnknown,
    changed_key_error,
    known_hosts_file,
    load_known_hosts,
)
from pctfleet.transport.options import ConnectOptions, ResolvedTarget, resolve

# paramiko logs tracebacks of failed handshakes to stderr; we report them as typed outcomes.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


class _Slot:
    """One SSH connection and how many of its channels are in use."""

    def __init__(self, client: paramiko.SSHClient) -> None:
        self.client = client
        self.in_use = 0

    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()


class NodeConnection:
    """All SSH traffic to one node. Thread-safe."""

    def __init__(self, node: str, address: str, options: ConnectOptions) -> None:
        self.node = node
        self.target: ResolvedTarget = resolve(node, address, options)
        self.options = options
        self.connections_opened = 0
        self._slots: list[_Slot] = []
        self._cond = threading.Condition()
        self._jump: NodeConnection | None = None
        # Why the node could not be reached: every later caller gets the same verdict at
        # once instead of waiting out its own connect timeout (one verdict per node).
        self._failure: TransportError | None = None

    # -- connecting -------------------------------------------------------

    def _connect(self) -> paramiko.SSHClient:
        target = self.target
        record_file = known_hosts_file(self.options.known_hosts)
        client = paramiko.SSHClient()
        load_known_hosts(client, self.options.known_hosts)
        policy = AcceptNew if self.options.accept_new_host_keys else RefuseUnknown
        client.set_missing_host_key_policy(policy(self.node, record_file))
        timeout = self.options.connect_timeout
        started = time.monotonic()
        try:
            client.connect(
                target.hostname,
                port=target.port,
                username=target.user,
                key_filename=list(target.identities) or None,
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
                channel_timeout=timeout,
                sock=self._proxy_sock(),
            )
        except TransportError:
            client.close()
            raise
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise changed_key_error(self.node, exc, record_file) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise AuthFailed(
                self.node,
                f"authentication failed for {target.user}@{target.hostname}:{target.port}: {exc}",
                "check --user and --identity, or load the key into ssh-agent",
            ) from None
        except (OSError, paramiko.SSHException, EOFError) as exc:
            client.close()
            timed_out = time.monotonic() - started >= timeout * 0.9
            raise self._unreachable(exc, timed_out) from None
        client.get_transport().set_keepalive(self.options.keepalive)
        self.connections_opened += 1
        return client

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

    def _proxy_sock(self) -> paramiko.Channel | None:
        """A direct-tcpip channel through the ProxyJump host, when ssh config names one."""
        jump = self.target.proxy_jump
        if not jump or jump == "none":
            return None
        user, _, hostport = jump.rpartition("@")
        host, _, port = hostport.partition(":")
        if self._jump is None:
            jump_options = ConnectOptions(
                user=user or None,
                port=int(port) if port else None,
                known_hosts=self.options.known_hosts,
                accept_new_host_keys=self.options.accept_new_host_keys,
                connect_timeout=self.options.connect_timeout,
                ssh_config=self.options.ssh_config,
            )
            self._jump = NodeConnection(f"{self.node} (via {host})", host, jump_options)
        slot = self._jump._acquire()
        dest = (self.target.hostname, self.target.port)
        return slot.client.get_transport().open_channel("direct-tcpip", dest, ("127.0.0.1", 0))

    # -- channel slots ----------------------------------------------------

    def _acquire(self) -> _Slot:
        with self._cond:
            while True:
                self._slots = [s for s in self._slots if s.alive() or s.in_use]
                for slot in self._slots:
                    if slot.in_use < self.options.max_sessions and slot.alive():
                        slot.in_use += 1
                        return slot
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
    ) -> tuple[int, float]:
        """Run a node shell command line; stream its output; return (exit, seconds)."""
        started = time.monotonic()
        slot = self._acquire()
        try:
            try:
                channel = slot.client.get_transport().open_session(
                    timeout=self.options.connect_timeout
                )
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise self._unreachable(exc) from None
            limit = timeout if timeout is not None else self.options.command_timeout
            code = pump_channel(channel, command, stdin, limit, stdout, stderr, self.node)
        finally:
            self._release(slot)
        return code, time.monotonic() - started

    def close(self) -> None:
        with self._cond:
            for slot in self._slots:
                slot.client.close()
            self._slots.clear()
        if self._jump is not None:
            self._jump.close()


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

    def close(self) -> None:
        for conn in self._nodes.values():
            conn.close()
