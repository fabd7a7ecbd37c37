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

from pctfleet.transport import keepwire
from pctfleet.transport.base import TransportError
from pctfleet.transport.keep import options_from
from pctfleet.transport.ssh import NodeConnection

REAP_EVERY = 0.5


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
    """A command's stdin as it arrives in I frames, ended by E."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.ended = False

    def read(self, size: int = -1) -> bytes:
        while not self.ended:
            kind, payload = keepwire.receive(self.stream)
            if kind == b"E":
                self.ended = True
            elif payload:
                return payload
        return b""


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
        kept = self.kept.get(str(request.get("key")))
        if kept is None or not kept.usable():
            keepwire.send(sock, b"G")
            return
        with self.lock:
            kept.in_flight += 1
        try:
            keepwire.send_json(sock, b"A", {})
            sink_lock = threading.Lock()
            timeout = request.get("timeout")
            try:
                code, seconds = kept.conn.exec(
                    str(request["command"]),
                    stdin=StdinFrames(stream),  # type: ignore[arg-type]
                    timeout=None if timeout is None else float(timeout),
                    stdout=FrameSink(sock, b"O", sink_lock),  # type: ignore[arg-type]
                    stderr=FrameSink(sock, b"R", sink_lock),  # type: ignore[arg-type]
                )
            except TransportError as exc:
                keepwire.send_json(sock, b"F", keepwire.error_frame(exc))
                return
            keepwire.send_json(sock, b"C", {"code": code, "seconds": seconds})
        finally:
            with self.lock:
                kept.in_flight -= 1
                kept.last_used = time.monotonic()

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

    def idle(self) -> bool:
        with self.lock:
            return not self.kept and not self.clients


def _peer_uid(sock: socket.socket) -> int:
    _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return uid


def serve_client(keeper: Keeper, sock: socket.socket, stop: threading.Event) -> None:
    with sock:
        if _peer_uid(sock) != os.getuid():
            return  # only this user's processes
        stream = sock.makefile("rb")
        try:
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
        if keeper.idle():
            break
    path.unlink(missing_ok=True)
    pid_file.unlink(missing_ok=True)
    server.close()
    with keeper.lock:
        left = list(keeper.kept.values())
    keeper.drop(left, "keeper ends")
    log("ended")
    os._exit(0)
