"""Logins kept between commands (`--persist SECONDS`), like OpenSSH's ControlPersist.

A command run with `--persist` hands each node it logged in to over to a
connection keeper: a background process of the same user (transport/keeper.py)
that logs in to the node itself, with the same options and host-key policy,
and keeps that login for SECONDS after its last use. The next command asks the
keeper first: a node it keeps costs no login (no TCP handshake, key exchange
or authentication, not even importing paramiko); its commands run on a new
channel of the kept connection. Every other node connects as always.

A login is reused only under the same settings: the key covers the node, its
address, user, port, identity, ssh_options, and the bytes of the known_hosts
and ssh config files. Editing known_hosts (or ~/.ssh/config) means a fresh,
freshly checked login. When the kept connection turns out dead before a
command starts, the command logs in itself, so a node is unreachable only when
a login of its own says so.

The keeper listens on a socket in a directory only this user can enter, and
answers only this user's processes. `pctfleet connections` lists what it keeps
and `--close` ends it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import pctfleet
from pctfleet.transport import keepwire
from pctfleet.transport.base import CommandTimeout, NodeUnreachable, Stdin, stdin_chunks
from pctfleet.transport.early import early_port
from pctfleet.transport.options import (
    SSH_CONFIG,
    SYSTEM_SSH_CONFIG,
    ConnectOptions,
    ResolvedTarget,
)

if TYPE_CHECKING:
    from pctfleet.transport.ssh import NodeConnection

USER_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
SYSTEM_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")
SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux
LOG_MAX = 1 << 20  # a keeper's log is started afresh past this size


class Gone(Exception):
    """The keeper does not (or no longer) keep this login: connect yourself."""


# -- where the keeper lives -----------------------------------------------------


def keeper_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "pctfleet"
    return Path("~/.cache/pctfleet/keep").expanduser()


def private_dir(path: Path) -> bool:
    """Create `path` for this user alone; False when it exists and others may enter it."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = os.lstat(path)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def keeper_socket() -> Path | None:
    """This user's keeper socket for this environment (agent, home, interpreter,
    pctfleet version); None when no private place for it exists."""
    who = [
        os.environ.get("HOME", ""),
        os.environ.get("SSH_AUTH_SOCK", ""),
        sys.executable,
        pctfleet.__version__,
        str(keepwire.PROTOCOL),
        str(Path(pctfleet.__file__).parent),
    ]
    name = "k-" + hashlib.sha256("\0".join(who).encode()).hexdigest()[:12] + ".sock"
    # A long home leaves no room in a socket address: then a short folder in /tmp,
    # refused like any other unless this user made it and no one else may enter.
    for folder in (keeper_dir(), Path(f"/tmp/pctfleet-keep-{os.getuid()}")):
        path = folder / name
        if len(str(path)) <= SOCKET_PATH_MAX:
            return path if private_dir(folder) else None
    return None


def keeper_sockets() -> list[Path]:
    """Every keeper socket of this user's private folders (any environment)."""
    found: list[Path] = []
    for folder in (keeper_dir(), Path(f"/tmp/pctfleet-keep-{os.getuid()}")):
        if folder.is_dir() and private_dir(folder):
            found += sorted(folder.glob("k-*.sock"))
    return found


def unkept_reason() -> str:
    """Why keeper_socket() found no place, in a line."""
    return (
        f"--persist: no private folder for the connection keeper's socket "
        f"({keeper_dir()} must be this user's alone, mode 0700); logins are not kept"
    )


# -- which login -----------------------------------------------------------------


def _absolute(path: str | None) -> str | None:
    return str(Path(path).expanduser().absolute()) if path else None


def portable(options: ConnectOptions) -> ConnectOptions:
    """The options with every file named absolutely: the keeper runs elsewhere."""
    return replace(
        options,
        identity=_absolute(options.identity),
        known_hosts=_absolute(options.known_hosts),
        ssh_config=_absolute(options.ssh_config),
    )


def _file_state(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return f"absent:{exc.errno}"


def _trust_files(options: ConnectOptions) -> list[Path]:
    """The files a login reads its host keys and settings from."""
    if options.known_hosts:
        files = [Path(options.known_hosts)]
    else:
        files = [SYSTEM_KNOWN_HOSTS, USER_KNOWN_HOSTS.expanduser()]
    if options.ssh_config:
        return [*files, Path(options.ssh_config)]
    return [*files, SSH_CONFIG.expanduser(), SYSTEM_SSH_CONFIG]


def login_key(node: str, address: str, options: ConnectOptions) -> str | None:
    """What a kept login is filed under; None when only Fabric can tell where the
    node is (ProxyJump, Match, Include...): those nodes are never kept."""
    if early_port(options) is None:
        return None
    options = portable(options)
    identity = Path(options.identity) if options.identity else None
    said = {
        "node": node,
        "address": address,
        "user": options.user,
        "port": options.port,
        "identity": [options.identity, _file_state(identity) if identity else None],
        "ssh_options": options.ssh_options,
        "max_sessions": options.max_sessions,
        "files": [[str(p), _file_state(p)] for p in _trust_files(options)],
    }
    return hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()


def options_json(options: ConnectOptions) -> dict:
    return asdict(portable(options))


def options_from(value: dict) -> ConnectOptions:
    value = dict(value)
    value["ssh_options"] = tuple(tuple(pair) for pair in value.get("ssh_options") or ())
    return ConnectOptions(**value)


# -- talking to the keeper --------------------------------------------------------


def _connect(path: Path, timeout: float = 5.0) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def ask(path: Path, kind: bytes, request: dict, timeout: float = 15.0) -> dict | None:
    """One request and its answer; None when no keeper answers."""
    sock = _connect(path, timeout)
    if sock is None:
        return None
    with sock:
        try:
            keepwire.send_json(sock, kind, request)
            answer_kind, payload = keepwire.receive(sock.makefile("rb"))
        except (OSError, keepwire.WireError):
            return None
    return keepwire.decode(payload) if answer_kind == b"A" else None


Node = tuple[str, str, ConnectOptions]  # name, address, options: as NodePool.get takes them


def lookup(path: Path, nodes: list[Node]) -> dict[Node, dict]:
    """The nodes whose login the keeper holds, with what it resolved (user, host, port).
    A login still under way is waited for: it is sooner than one of our own."""
    keys = {node: login_key(*node) for node in nodes}
    wanted = [key for key in keys.values() if key]
    if not wanted:
        return {}
    wait = max(node[2].connect_timeout for node in nodes)
    answer = ask(path, b"Q", {"keys": wanted, "wait": wait}, timeout=wait + 5)
    held = (answer or {}).get("held") or {}
    return {node: held[key] for node, key in keys.items() if key in held}


def keep_logins(path: Path, nodes: list[Node]) -> None:
    """Ask the keeper (started now if none runs) to keep a login to each node."""
    requests = []
    for name, address, options in nodes:
        key = login_key(name, address, options)
        if key:
            requests.append(
                {
                    "key": key,
                    "node": name,
                    "address": address,
                    "options": options_json(options),
                    "persist": options.persist,
                }
            )
    if not requests:
        return
    if all(ask(path, b"K", request) is not None for request in requests):
        return
    _spawn(path, requests)


def _spawn(path: Path, requests: list[dict]) -> None:
    """Start a keeper in its own session, the requests on its stdin. A keeper that
    finds another already running hands the requests to it and ends."""
    package_parent = str(Path(pctfleet.__file__).parent.parent)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from pctfleet.transport import keeper; keeper.main(sys.argv[2])"
    )
    log_path = path.with_suffix(".log")
    with contextlib.suppress(OSError):
        if log_path.stat().st_size > LOG_MAX:
            log_path.unlink()
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    with log:
        child = subprocess.Popen(
            [sys.executable, "-I", "-c", code, package_parent, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            cwd="/",  # holds no folder of the command's busy
        )
    assert child.stdin is not None
    with child.stdin:
        child.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())
    # Reaped when it ends, should this process live that long (an API user, verify's pytest).
    threading.Thread(target=child.wait, daemon=True).start()


# -- a node whose login is kept ------------------------------------------------------


class KeptNode:
    """NodeConnection's interface over the keeper's login; a fresh login of our own
    when the keeper turns out not to hold it any more."""

    def __init__(self, path: Path, node: Node, held: dict) -> None:
        self.node, self.address, self.options = node
        self.target = ResolvedTarget(
            node=self.node,
            hostname=str(held.get("hostname", self.address)),
            port=int(held.get("port", self.options.port or 22)),
            user=str(held.get("user", "root")),
            options=self.options,
        )
        self.max_sessions = max(1, self.options.max_sessions)
        self.connections_reused = 1
        self._path = path
        self._key = login_key(*node)
        self._own: NodeConnection | None = None
        self._lock = threading.Lock()

    @property
    def connections_opened(self) -> int:
        return self._own.connections_opened if self._own is not None else 0

    def exec(
        self,
        command: str,
        *,
        stdin: Stdin,
        timeout: float | None,
        stdout: BinaryIO,
        stderr: BinaryIO,
        read_only: bool = False,
    ) -> tuple[int, float]:
        if self._own is None:
            try:
                return self._exec_kept(command, stdin, timeout, stdout, stderr)
            except Gone:
                pass
        own = self.own()
        return own.exec(
            command, stdin=stdin, timeout=timeout, stdout=stdout, stderr=stderr, read_only=read_only
        )

    def own(self) -> NodeConnection:
        """Our own login to the node, made on first need."""
        with self._lock:
            if self._own is None:
                from pctfleet.transport.early import ssh_module

                self._own = ssh_module().NodeConnection(self.node, self.address, self.options)
            return self._own

    def _exec_kept(
        self, command: str, stdin: Stdin, timeout: float | None, stdout: BinaryIO, stderr: BinaryIO
    ) -> tuple[int, float]:
        limit = timeout if timeout is not None else self.options.command_timeout
        # The keeper opens the channel before it answers: up to a connect timeout.
        sock = _connect(self._path, self.options.connect_timeout + 5)
        if sock is None:
            raise Gone
        with sock:
            stream = sock.makefile("rb")
            try:
                request = {"key": self._key, "command": command, "timeout": limit}
                keepwire.send_json(sock, b"X", request)
                kind, _ = keepwire.receive(stream)
            except (OSError, keepwire.WireError):
                raise Gone from None
            if kind != b"A":
                raise Gone
            # The keeper keeps the command's deadline; this one only bounds a keeper
            # that stopped answering.
            sock.settimeout(None if limit is None else limit + self.options.connect_timeout + 30)
            threading.Thread(target=_send_stdin, args=(sock, stdin), daemon=True).start()
            return self._collect(stream, stdout, stderr, limit)

    def _collect(
        self, stream: BinaryIO, stdout: BinaryIO, stderr: BinaryIO, limit: float | None
    ) -> tuple[int, float]:
        sinks = {b"O": stdout, b"R": stderr}
        try:
            while True:
                kind, payload = keepwire.receive(stream)
                if kind in sinks:
                    sinks[kind].write(payload)
                elif kind == b"C":
                    done = keepwire.decode(payload)
                    return int(done["code"]), float(done["seconds"])
                elif kind == b"F":
                    raise keepwire.error_from(keepwire.decode(payload))
                else:
                    raise keepwire.WireError(f"an unexpected frame {kind!r}")
        except TimeoutError:
            raise CommandTimeout(
                self.node,
                f"command did not finish within {limit:g}s (the connection keeper is silent)",
                "raise --timeout or the task's timeout if the work is expected to be slow",
            ) from None
        except (OSError, keepwire.WireError, KeyError, ValueError) as exc:
            raise NodeUnreachable(
                self.node, f"connection lost during a command: the connection keeper said {exc}"
            ) from None

    def hand_over(self) -> None:
        self.close()

    def close(self) -> None:
        if self._own is not None:
            self._own.close()


def _send_stdin(sock: socket.socket, stdin: Stdin) -> None:
    try:
        for chunk in stdin_chunks(stdin):
            for start in range(0, len(chunk), keepwire.CHUNK):
                keepwire.send(sock, b"I", chunk[start : start + keepwire.CHUNK])
        keepwire.send(sock, b"E")
    except OSError:
        pass  # the reader sees why


def kept_or_own(path: Path, node: Node, held: dict | None) -> Any:  # noqa: ANN401
    """A KeptNode when the keeper holds the node's login, else a NodeConnection."""
    if held is not None:
        return KeptNode(path, node, held)
    from pctfleet.transport.early import ssh_module

    return ssh_module().NodeConnection(*node)


def close_and_keep(path: Path, conns: list[Any]) -> None:
    """Close the connections, then have the keeper keep each node we logged in to, and
    keep each kept login for this command's --persist from now on."""
    logged_in = []
    for conn in conns:
        own = conn._own if isinstance(conn, KeptNode) else conn
        used = own is None or own.connections_opened  # a kept login: its persist renewed
        if used and conn.options.persist > 0:
            logged_in.append((conn.node, conn.address, conn.options))
        conn.close()
    if logged_in:
        keep_logins(path, logged_in)


class KeepPool:
    """NodePool's interface: nodes the keeper holds are KeptNodes, the others log in
    as always; at close, every node logged in to is handed to the keeper. `held`
    has what the keeper said of some nodes already; it is asked about the rest."""

    def __init__(self, path: Path, held: dict[Node, dict | None]) -> None:
        self._path = path
        self._held = held
        self._nodes: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, node: str, address: str, options: ConnectOptions) -> Any:  # noqa: ANN401
        with self._lock:
            conn = self._nodes.get(node)
            if conn is None:
                key = (node, address, options)
                if key not in self._held:
                    self._held.update(lookup(self._path, [key]) or {key: None})
                conn = self._nodes[node] = kept_or_own(self._path, key, self._held.get(key))
            return conn

    def connections_opened(self) -> dict[str, int]:
        return {name: conn.connections_opened for name, conn in self._nodes.items()}

    def connections_reused(self) -> dict[str, int]:
        return {n: getattr(c, "connections_reused", 0) for n, c in self._nodes.items()}

    def close(self) -> None:
        close_and_keep(self._path, list(self._nodes.values()))
