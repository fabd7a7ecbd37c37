"""Command-line options shared by every command that reaches nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pctfleet.transport.options import ConnectOptions

CONN = "Connection"
SEL = "Selection"

Inventory = Annotated[
    Path | None,
    typer.Option(
        "-i",
        "--inventory",
        help="Inventory YAML (pctfleet or Ansible format).",
        rich_help_panel=SEL,
    ),
]
Host = Annotated[
    str | None,
    typer.Option(
        "--host", help="Ad hoc: a Proxmox node address (use with --ct).", rich_help_panel=SEL
    ),
]
Ct = Annotated[
    str | None,
    typer.Option(
        "--ct",
        help="Ad hoc: container ids on --host, e.g. 200,201 or 200-205.",
        rich_help_panel=SEL,
    ),
]
Limit = Annotated[
    str | None,
    typer.Option(
        "--limit",
        "-l",
        help="Select containers: group, node, node/ctid, name or glob; "
        "'!x' excludes, '&x' intersects.",
        rich_help_panel=SEL,
    ),
]
User = Annotated[
    str | None,
    typer.Option(
        "--user",
        "-u",
        help="SSH user on the nodes. A non-root user runs 'sudo -n pct'.",
        show_default="root, or ~/.ssh/config",
        rich_help_panel=CONN,
    ),
]
Port = Annotated[
    int | None,
    typer.Option(
        "--port",
        min=1,
        max=65535,
        help="SSH port.",
        show_default="22, or ~/.ssh/config",
        rich_help_panel=CONN,
    ),
]
Identity = Annotated[
    str | None,
    typer.Option(
        "--identity",
        help="Private key file (ssh-agent and ~/.ssh keys are tried too).",
        rich_help_panel=CONN,
    ),
]
KnownHosts = Annotated[
    str | None,
    typer.Option(
        "--known-hosts",
        help="known_hosts file to check node keys against.",
        show_default="/etc/ssh/ssh_known_hosts and ~/.ssh/known_hosts",
        rich_help_panel=CONN,
    ),
]
AcceptNew = Annotated[
    bool,
    typer.Option(
        "--accept-new-host-keys",
        help="Record unknown node keys (like OpenSSH accept-new). A changed key is always refused.",
        rich_help_panel=CONN,
    ),
]
Timeout = Annotated[
    float,
    typer.Option(
        "--timeout", min=0.1, help="Seconds one remote command may take.", rich_help_panel=CONN
    ),
]
ConnectTimeout = Annotated[
    float,
    typer.Option(
        "--connect-timeout",
        min=0.1,
        help="Seconds to connect and authenticate (capped at --timeout).",
        rich_help_panel=CONN,
    ),
]


def connect_options(
    user: str | None,
    port: int | None,
    identity: str | None,
    known_hosts: str | None,
    accept_new: bool,
    timeout: float,
    connect_timeout: float,
) -> ConnectOptions:
    return ConnectOptions(
        user=user,
        port=port,
        identity=identity,
        known_hosts=known_hosts,
        accept_new_host_keys=accept_new,
        connect_timeout=min(connect_timeout, timeout),
        command_timeout=timeout,
    )


def split_tags(text: str | None) -> set[str] | None:
    """`--tags a,b` as a set (None when not given)."""
    return {t.strip() for t in text.split(",") if t.strip()} if text else None
