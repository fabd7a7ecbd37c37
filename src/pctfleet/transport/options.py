"""Connection options for a Proxmox node, merged from CLI, inventory and ~/.ssh/config."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import paramiko

SSH_CONFIG = Path("~/.ssh/config")


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


def _ssh_config_for(alias: str, path: str | None) -> dict:
    config_path = Path(path or SSH_CONFIG).expanduser()
    if not config_path.exists():
        return {}
    return paramiko.SSHConfig.from_path(str(config_path)).lookup(alias)


def resolve(node: str, address: str, options: ConnectOptions) -> ResolvedTarget:
    """Explicit options win, then ~/.ssh/config for the address, then ssh's defaults.

    >>> resolve("pve1", "10.1.2.6", ConnectOptions()).port
    22
    """
    conf = _ssh_config_for(address, options.ssh_config)
    identities = (options.identity,) if options.identity else tuple(conf.get("identityfile", ()))
    port = options.port or int(conf.get("port", 22))
    return ResolvedTarget(
        node=node,
        hostname=conf.get("hostname", address),
        port=port,
        user=options.user or conf.get("user", "root"),
        identities=tuple(str(Path(p).expanduser()) for p in identities),
        proxy_jump=conf.get("proxyjump"),
        options=options,
    )


def with_overrides(base: ConnectOptions, **values: object) -> ConnectOptions:
    """Apply only the values that were actually given (not None)."""
    return replace(base, **{k: v for k, v in values.items() if v is not None})
