"""Host key policy: OpenSSH semantics, not Fabric's auto-add.

Unknown keys are refused unless the operator asked for accept-new; a key that
differs from the recorded one is always refused, naming both fingerprints.
A Fabric Connection neither loads known_hosts nor refuses unknown keys, so
`enforce` replaces its policy on the connection and on every gateway hop.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from pathlib import Path

import fabric
import paramiko

from pctfleet.transport.base import HostKeyChanged, HostKeyUnknown
from pctfleet.transport.fixes import host_key_fix

USER_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
SYSTEM_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")

_record_lock = threading.Lock()


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style SHA256 fingerprint, as `ssh-keygen -lf` prints it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_file(explicit: str | None) -> Path:
    """The file new keys are recorded in (and read from first)."""
    return Path(explicit).expanduser() if explicit else USER_KNOWN_HOSTS.expanduser()


def load_known_hosts(client: paramiko.SSHClient, explicit: str | None) -> None:
    """Load the explicit file only, or the system and user files as ssh does."""
    if explicit:
        path = known_hosts_file(explicit)
        if path.exists():
            client.load_host_keys(str(path))
        return
    if SYSTEM_KNOWN_HOSTS.exists():
        client.load_system_host_keys(str(SYSTEM_KNOWN_HOSTS))
    user_file = USER_KNOWN_HOSTS.expanduser()
    if user_file.exists():
        client.load_system_host_keys(str(user_file))


class RefuseUnknown(paramiko.MissingHostKeyPolicy):
    def __init__(self, node: str, record_file: Path) -> None:
        self.node = node
        self.record_file = record_file

    def missing_host_key(self, client, hostname, key) -> None:  # noqa: ANN001
        raise HostKeyUnknown(
            self.node,
            f"host key for {hostname} is not in {self.record_file} "
            f"({key.get_name()} {fingerprint(key)})",
            host_key_fix(hostname, key.get_name(), self.record_file),
        )


class AcceptNew(paramiko.MissingHostKeyPolicy):
    """Record an unknown key (OpenSSH's StrictHostKeyChecking=accept-new)."""

    def __init__(self, node: str, record_file: Path) -> None:
        self.node = node
        self.record_file = record_file

    def missing_host_key(self, client, hostname, key) -> None:  # noqa: ANN001
        client.get_host_keys().add(hostname, key.get_name(), key)
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        with _record_lock:
            self.record_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.record_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a") as handle:
                handle.write(line)


def enforce(conn: fabric.Connection, node: str, known_hosts: str | None, accept_new: bool) -> None:
    """Give `conn` and each ProxyJump hop behind it our known_hosts and policy."""
    record_file = known_hosts_file(known_hosts)
    policy = AcceptNew if accept_new else RefuseUnknown
    hop: object = conn
    where = node
    while isinstance(hop, fabric.Connection):
        load_known_hosts(hop.client, known_hosts)
        hop.client.set_missing_host_key_policy(policy(where, record_file))
        hop = hop.gateway
        where = f"{node} (via {getattr(hop, 'host', hop)})"


def changed_key_error(node: str, exc: paramiko.BadHostKeyException, record_file: Path) -> Exception:
    return HostKeyChanged(
        node,
        f"HOST KEY CHANGED for {exc.hostname}: known {fingerprint(exc.expected_key)}, "
        f"offered {fingerprint(exc.key)}",
        f"refused; if the node was reinstalled, remove its old line from {record_file}",
    )
