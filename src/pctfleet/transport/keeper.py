"""The connection keeper: logins kept between commands run with `--persist`.

One process per user and environment (transport/keep.py names its socket). It
logs in to each node it is asked to keep with the same NodeConnection, options
and host-key policy as a command would, runs the commands it is sent on new
channels of that login, and drops a login SECONDS after its last use. With
nothing left to keep it ends. It answers only processes of its own user.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import paramiko

from pctfleet.transport import keepwire
from pctfleet.transport.base import TransportError
from pctfleet.transport.keep import options_from
from pctfleet.transport.ssh import NodeConnection

REAP_EVERY = 0.5
LOGINS_AT_ONCE = threading.BoundedSemaphore(16)


def log(text: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sys.stderr.write(f"{stamp} [{os.getpid()}] {text}\n")
    sys.stderr.flush()


@dataclass
class Kept:
    """One kept login and its use."""

    key: str
    conn: NodeConnection
    persist: float
    ready: threading.Event = field(default_factory=threading.Event)
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)
    since: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def usable(self) -> bool:
        return self.ready.is_set() and self.conn.alive()

    def describe(self) -> dict:
        target = self.conn.target
        return {
            "node": self.conn.node,
            "address": self.conn.address,
            "user": target.user,
            "hostname": target.hostname,
            "port": target.port,
            "since": self.since,
            "idle_s": round(time.monotonic() - self.last_used, 1),
            "persist_s": self.persist,
            "in_flight": self.in_flight,
            "alive": self.usable(),
        }


class StdinFrames:
    """A command's stdin as it arrives in I frames, ended by E. A client that goes
    away ends the command, as a dropped SSH connection would."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.ended = False
        self.begun = False
        self.done = False  # the command has ended: the client may close
        self.channel: paramiko.Channel | None = None
        self._first: tuple[bytes, bytes] | None = None

    def begin(self, channel: paramiko.Channel) -> None:
        """Wait for the client's first stdin frame, sent once it read A: a client that
        gave up waiting sends none, and the command never starts (no double run)."""
        self._first = keepwire.receive(self.stream)
        self.channel, self.begun = channel, True

    def read(self, size: int = -1) -> bytes:
        while not self.ended:
            try:
                kind, payload = self._first or keepwire.receive(self.stream)
            except (OSError, keepwire.WireError):
                self._lost()
                return b""
            self._first = None
            if kind == b"E":
                self.ended = True
                threading.Thread(target=self._watch, daemon=True).start()
            elif payload:
                return payload
        return b""

    def _watch(self) -> None:
        """After stdin, the client sends nothing: the stream ends only when it goes."""
        try:
            more = self.stream.read(1)
        except (OSError, ValueError):
            more = b""
        if not more:
            self._lost()

    def _lost(self) -> None:
        self.ended = True
        if not self.done and self.channel is not None:
            self.channel.close()


class FrameSink:
    """stdout or stderr of a command, sent back as O or R frames."""

    def __init__(self, sock: socket.socket, kind: bytes, lock: threading.Lock) -> None:
        self.sock, self.kind, self.lock = sock, kind, lock

    def write(self, data: bytes) -> int:
        with self.lock:
            keepwire.send(self.sock, self.kind, data)
        return len(data)


class Keeper:
    def __init__(self) -> None:
        self.kept: dict[str, Kept] = {}
        self.lock = threading.Lock()
        self.clients = 0
        self.ending = False

    # -- logins ---------------------------------------------------------------

    def keep(self, request: dict) -> dict:
        key = str(request["key"])
        with self.lock:
            if self.ending:
                raise keepwire.WireError("the keeper is ending")
            kept = self.kept.get(key)
            if kept is not None and (kept.usable() or not kept.ready.is_set()):
                kept.persist = float(request["persist"])
                kept.last_used = time.monotonic()
                return {"kept": key}
            options = options_from(request["options"])
            node, address = str(request["node"]), str(request["address"])
            conn = NodeConnection(node, address, options, adopt=False)
            kept = self.kept[key] = Kept(key, conn, float(request["persist"]))
        threading.Thread(target=self._login, args=(kept,), daemon=True).start()
        return {"kept": key}

    def _login(self, kept: Kept) -> None:
        try:
            with LOGINS_AT_ONCE:  # each costs CPU (kex) on the controller
                kept.conn.open()
            log(f"logged in to {kept.conn.node} ({kept.conn.address})")
        except Exception as exc:  # noqa: BLE001 - whatever it was, nothing is kept
            log(f"not kept: {kept.conn.node}: {exc}")
            with self.lock:
                self.kept.pop(kept.key, None)
            kept.conn.close()
        finally:
            kept.ready.set()

    def held(self, request: dict) -> dict:
        deadline = time.monotonic() + min(float(request.get("wait", 10)), 60.0)
        found = {}
        for key in request.get("keys", []):
            kept = self.kept.get(str(key))
            if kept is None:
                continue
            kept.ready.wait(max(0.0, deadline - time.monotonic()))
            if kept.usable():
                kept.last_used = time.monotonic()
                target = kept.conn.target
                found[key] = {"user": target.user, "hostname": target.hostname, "port": target.port}
        return {"held": found}

    # -- commands -------------------------------------------------------------

    def run_command(self, sock: socket.socket, stream: BinaryIO, request: dict) -> None:
        kept = self._claim(str(request.get("key")))
        if kept is None:
            keepwire.send(sock, b"G")
            return
        stdin = StdinFrames(stream)
        sink_lock = threading.Lock()
        timeout = request.get("timeout")

        def opened(channel: paramiko.Channel) -> None:
            keepwire.send_json(sock, b"A", {})
            stdin.begin(channel)

        try:
            code, seconds = kept.conn.exec(
                str(request["command"]),
                stdin=stdin,  # type: ignore[arg-type]
                timeout=None if timeout is None else float(timeout),
                stdout=FrameSink(sock, b"O", sink_lock),  # type: ignore[arg-type]
                stderr=FrameSink(sock, b"R", sink_lock),  # type: ignore[arg-type]
                opened=opened,
            )
        except TransportError as exc:
            if not stdin.begun:  # no channel: the kept login is dead, the client logs in
                self._forget(kept, f"no channel: {exc}")
                keepwire.send(sock, b"G")
                return
            keepwire.send_json(sock, b"F", keepwire.error_frame(exc))
            return
        finally:
            stdin.done = True
            self._release(kept)
        keepwire.send_json(sock, b"C", {"code": code, "seconds": seconds})

    def _claim(self, key: str) -> Kept | None:
        """The kept login for a command, counted busy; None when there is none alive."""
        with self.lock:
            kept = self.kept.get(key)
            if kept is None or self.ending or not kept.ready.is_set():
                return None
            kept.in_flight += 1
        if kept.conn.alive():
            return kept
        self._release(kept)
        self._forget(kept, "connection lost")
        return None

    def _release(self, kept: Kept) -> None:
        with self.lock:
            kept.in_flight -= 1
            kept.last_used = time.monotonic()

    def _forget(self, kept: Kept, why: str) -> None:
        with self.lock:
            if self.kept.get(kept.key) is kept:
                del self.kept[kept.key]
        self.drop([kept], why)

    # -- the rest -------------------------------------------------------------

    def listing(self) -> dict:
        with self.lock:
            kept = list(self.kept.values())
        return {"pid": os.getpid(), "kept": [k.describe() for k in kept]}

    def drop(self, kept: list[Kept], why: str) -> None:
        for item in kept:
            log(f"closing {item.conn.node}: {why}")
            item.conn.close()

    def expired(self) -> list[Kept]:
        now = time.monotonic()
        with self.lock:
            gone = [
                k
                for k in self.kept.values()
                if k.ready.is_set()
                and not k.in_flight
                and (now - k.last_used > k.persist or not k.conn.alive())
            ]
            for item in gone:
                del self.kept[item.key]
        return gone

    def stop_keeping(self) -> None:
        """Ending: nothing is held from now on, nor kept anew (the logins close as it ends)."""
        with self.lock:
            self.ending = True
            left = list(self.kept.values())
            self.kept.clear()
        self.drop(left, "closed on request")

    def end_if_idle(self) -> bool:
        """Nothing kept and nobody asking: end, taking no new logins from now on."""
        with self.lock:
            self.ending = self.ending or (not self.kept and not self.clients)
            return self.ending


def _same_file(path: Path, bound: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (bound.st_dev, bound.st_ino)


def _peer_uid(sock: socket.socket) -> int:
    _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return uid


def serve_client(keeper: Keeper, sock: socket.socket, stop: threading.Event) -> None:
    with sock:
        try:
            if _peer_uid(sock) != os.getuid():
                return  # only this user's processes
            stream = sock.makefile("rb")
            kind, payload = keepwire.receive(stream)
            request = keepwire.decode(payload)
            if kind == b"X":
                keeper.run_command(sock, stream, request)
            elif kind == b"Q":
                keepwire.send_json(sock, b"A", keeper.held(request))
            elif kind == b"K":
                keepwire.send_json(sock, b"A", keeper.keep(request))
            elif kind == b"L":
                keepwire.send_json(sock, b"A", keeper.listing())
            elif kind == b"S":
                keepwire.send_json(sock, b"A", keeper.listing())
                keeper.stop_keeping()
                stop.set()
        except (OSError, keepwire.WireError, KeyError, ValueError, TypeError) as exc:
            log(f"a request failed: {exc}")
        finally:
            with keeper.lock:
                keeper.clients -= 1


def _accept_loop(keeper: Keeper, server: socket.socket, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            sock, _ = server.accept()
        except OSError:
            return
        sock.settimeout(None)
        with keeper.lock:
            keeper.clients += 1
        threading.Thread(target=serve_client, args=(keeper, sock, stop), daemon=True).start()


def _read_requests() -> list[dict]:
    requests = []
    for line in sys.stdin.buffer.read().decode().splitlines():
        try:
            requests.append(json.loads(line))
        except ValueError:
            log("ignored a request line that is not JSON")
    return requests


def _hand_to_running(path: Path, requests: list[dict]) -> list[dict]:
    """Another keeper holds the lock: give it the requests (it may still be binding).
    What it does not take (it is ending) is returned."""
    from pctfleet.transport.keep import ask

    deadline = time.monotonic() + 5
    left = []
    for request in requests:
        while (taken := ask(path, b"K", request)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if taken is None:
            left.append(request)
    return left


def _take_lock(path: Path, requests: list[dict]) -> tuple[int, list[dict]] | None:
    """The keeper's lock, held for life; None when the running keeper took the requests."""
    lock_fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + 15
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock_fd, requests
        except OSError:
            pass
        requests = _hand_to_running(path, requests)
        if not requests or time.monotonic() > deadline:
            os.close(lock_fd)
            return None
        time.sleep(0.1)  # the running keeper is ending: take over once it has


def main(socket_path: str) -> None:
    path = Path(socket_path)
    requests = _read_requests()
    taken = _take_lock(path, requests)
    if taken is None:
        return
    _lock_fd, requests = taken  # held open: the lock lasts as long as this process
    path.unlink(missing_ok=True)  # a keeper that died left it; the lock says none runs
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old_mask)
    server.listen(128)
    bound = os.stat(path)
    pid_file = path.with_suffix(".pid")
    pid_file.write_text(f"{os.getpid()}\n")
    log(f"keeping logins on {path}")
    keeper = Keeper()
    for request in requests:
        keeper.keep(request)
    stop = threading.Event()
    threading.Thread(target=_accept_loop, args=(keeper, server, stop), daemon=True).start()
    while not stop.wait(REAP_EVERY):
        keeper.drop(keeper.expired(), "idle")
        if keeper.end_if_idle():
            break
    server.close()
    if _same_file(path, bound):  # not a successor's socket, bound after this one ended
        path.unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)
    with keeper.lock:
        left = list(keeper.kept.values())
    keeper.drop(left, "keeper ends")
    log("ended")
    os._exit(0)
