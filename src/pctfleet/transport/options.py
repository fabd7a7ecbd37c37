"""Connection options for a Proxmox node, merged from CLI, inventory and ssh config.

Resolution is Fabric's: a `fabric.Connection` reads ~/.ssh/config (and the
system file), turns ProxyJump into a gateway Connection and collects identity
files. On top of it, explicit options win, and the inventory's `ssh_options`
act like `ssh -o`: they win over the config files.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use: they are a third of the CLI's start-up
    import fabric
    import paramiko

SSH_CONFIG = Path("~/.ssh/config")
SYSTEM_SSH_CONFIG = Path("/etc/ssh/ssh_config")


@dataclass(frozen=True)
class ConnectOptions:
    """How to reach one node. None means "not said": ssh config or the default applies."""

    user: str | None = None
    port: int | None = None
    identity: str | None = None
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    connect_timeout: float = 10.0
    command_timeout: float | None = 600.0
    keepalive: int = 15
    max_sessions: int = 10
    ssh_config: str | None = None
    # (name, value) pairs in ssh_config syntax, from the inventory's ssh_options.
    ssh_options: tuple[tuple[str, str], ...] = ()
    # Seconds a login is kept for the next command after this one (transport/keep.py).
    persist: float = 0.0


@dataclass(frozen=True)
class ResolvedTarget:
    """A node address with every connection setting decided."""

    node: str
    hostname: str
    port: int
    user: str
    identities: tuple[str, ...] = ()
    proxy_jump: str | None = None
    options: ConnectOptions = field(default_factory=ConnectOptions)


def _ssh_config(address: str, options: ConnectOptions) -> paramiko.SSHConfig:
    """ssh_options first (the first value found wins, as in ssh), then the files."""
    import paramiko

    config = paramiko.SSHConfig()
    if options.ssh_options:
        lines = "".join(f"  {key} {value}\n" for key, value in options.ssh_options)
        config.parse(io.StringIO(f"Host {address}\n{lines}"))
    if options.ssh_config:
        paths = [Path(options.ssh_config).expanduser()]
    else:
        paths = [SSH_CONFIG.expanduser(), SYSTEM_SSH_CONFIG]
    for path in paths:
        if path.exists():
            with open(path) as handle:
                config.parse(handle)
    return config


def connection(address: str, options: ConnectOptions) -> fabric.Connection:
    """An unopened Fabric Connection to `address` with every setting resolved."""
    import fabric

    from pctfleet.transport.auth import PipelinedTransport

    # Proxmox nodes are administered as root: that, not the local user, is the default.
    overrides: dict = {"user": "root"}
    keys = [str(Path(options.identity).expanduser())] if options.identity else []
    if keys:
        # Config-level, so ProxyJump hops (which Fabric builds from this config) offer it too.
        overrides["connect_kwargs"] = {"key_filename": keys}
    config = fabric.Config(ssh_config=_ssh_config(address, options), overrides=overrides)
    conn = fabric.Connection(address, user=options.user, port=options.port, config=config)
    if keys:
        # For the node itself an explicit identity replaces the files' IdentityFile.
        conn.connect_kwargs = {**conn.connect_kwargs, "key_filename": keys}
    conn.connect_kwargs = {**conn.connect_kwargs, "transport_factory": PipelinedTransport}
    return conn


def resolve(node: str, address: str, options: ConnectOptions) -> ResolvedTarget:
    """Explicit options win, then ssh_options, then ssh config, then ssh's defaults.

    >>> resolve("pve1", "10.1.2.6", ConnectOptions()).port
    22
    """
    conn = connection(address, options)
    keys = conn.connect_kwargs.get("key_filename") or ()
    return ResolvedTarget(
        node=node,
        hostname=conn.host,
        port=conn.port,
        user=conn.user,
        identities=tuple(str(Path(p).expanduser()) for p in keys),
        proxy_jump=conn.ssh_config.get("proxyjump"),
        options=options,
    )


def ssh_option_pairs(ssh_options: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """An inventory's ssh_options as ssh_config lines (booleans as yes/no)."""

    def text(value: object) -> str:
        return ("yes" if value else "no") if isinstance(value, bool) else str(value)

    return tuple((key, text(value)) for key, value in ssh_options.items())


def with_overrides(base: ConnectOptions, **values: object) -> ConnectOptions:
    """Apply only the values that were actually given (not None)."""
    return replace(base, **{k: v for k, v in values.items() if v is not None})
