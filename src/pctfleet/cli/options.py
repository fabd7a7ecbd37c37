"""The option groups commands share, each flag and help declared once (see groups.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from pctfleet import exitcodes
from pctfleet.textout import visible
from pctfleet.transport.options import ConnectOptions

CONN = "Connection"
SEL = "Selection"


def fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"error: {visible(message)}", err=True, fg="red")
    return typer.Exit(code)


def split_tags(text: str | None) -> set[str] | None:
    """`--tags a,b` as a set (None when not given)."""
    return {t.strip() for t in text.split(",") if t.strip()} if text else None


def select_containers(inventory: Path | None, host: str | None, ct: str | None, limit: str | None):
    """The inventory and the containers a command works on: -i INVENTORY or --host/--ct."""
    from pctfleet.inventory import adhoc_inventory, load_inventory, parse_ctids

    if inventory and host:
        raise fail("give either -i INVENTORY or --host/--ct, not both", exitcodes.BAD_OPTIONS)
    if host:
        if not ct:
            raise fail("--host needs --ct (for example --ct 200,201)", exitcodes.BAD_OPTIONS)
        inv = adhoc_inventory(host, parse_ctids(ct))
    elif inventory:
        inv = load_inventory(inventory)
    else:
        raise fail("say where: -i INVENTORY, or --host NODE --ct 200", exitcodes.BAD_OPTIONS)
    return inv, inv.select(limit)


@dataclass
class Selection:
    inventory: Annotated[
        Path | None,
        typer.Option(
            "-i",
            "--inventory",
            help="Inventory YAML (pctfleet or Ansible format).",
            rich_help_panel=SEL,
        ),
    ] = None
    host: Annotated[
        str | None,
        typer.Option(
            "--host", help="Ad hoc: a Proxmox node address (use with --ct).", rich_help_panel=SEL
        ),
    ] = None
    ct: Annotated[
        str | None,
        typer.Option(
            "--ct",
            help="Ad hoc: container ids on --host, e.g. 200,201 or 200-205.",
            rich_help_panel=SEL,
        ),
    ] = None
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            "-l",
            help="Select containers: group, node, node/ctid, name or glob; "
            "'!x' excludes, '&x' intersects.",
            rich_help_panel=SEL,
        ),
    ] = None

    def select(self):
        return select_containers(self.inventory, self.host, self.ct, self.limit)


@dataclass
class Connection:
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            help="SSH user on the nodes. A non-root user runs 'sudo -n pct'.",
            show_default="root, or ~/.ssh/config",
            rich_help_panel=CONN,
        ),
    ] = None
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=1,
            max=65535,
            help="SSH port.",
            show_default="22, or ~/.ssh/config",
            rich_help_panel=CONN,
        ),
    ] = None
    identity: Annotated[
        str | None,
        typer.Option(
            "--identity",
            help="Private key file (ssh-agent and ~/.ssh keys are tried too).",
            rich_help_panel=CONN,
        ),
    ] = None
    known_hosts: Annotated[
        str | None,
        typer.Option(
            "--known-hosts",
            help="known_hosts file to check node keys against.",
            show_default="/etc/ssh/ssh_known_hosts and ~/.ssh/known_hosts",
            rich_help_panel=CONN,
        ),
    ] = None
    accept_new_host_keys: Annotated[
        bool,
        typer.Option(
            "--accept-new-host-keys",
            help="Record unknown node keys (like OpenSSH accept-new). "
            "A changed key is always refused.",
            rich_help_panel=CONN,
        ),
    ] = False
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0.1, help="Seconds one remote command may take.", rich_help_panel=CONN
        ),
    ] = 600.0
    connect_timeout: Annotated[
        float,
        typer.Option(
            "--connect-timeout",
            min=0.1,
            help="Seconds to connect and authenticate (capped at --timeout).",
            rich_help_panel=CONN,
        ),
    ] = 10.0

    def options(self) -> ConnectOptions:
        return ConnectOptions(
            user=self.user,
            port=self.port,
            identity=self.identity,
            known_hosts=self.known_hosts,
            accept_new_host_keys=self.accept_new_host_keys,
            connect_timeout=min(self.connect_timeout, self.timeout),
            command_timeout=self.timeout,
        )


@dataclass
class Run:
    """What of a playbook runs, and how."""

    tags: Annotated[
        str | None,
        typer.Option("--tags", "-t", help="Only tasks with these tags (comma-separated)."),
    ] = None
    skip_tags: Annotated[
        str | None, typer.Option("--skip-tags", help="Skip tasks with these tags.")
    ] = None
    check: Annotated[
        bool, typer.Option("--check", "-C", help="Change nothing; report what would change.")
    ] = False
    diff: Annotated[
        bool,
        typer.Option("--diff", "-D", help="Show before/after of files and package versions."),
    ] = False
    extra_vars: Annotated[
        list[str] | None,
        typer.Option(
            "--extra-vars", "-e", help="k=v, @file.yml or a JSON mapping; highest precedence."
        ),
    ] = None

    def run_options(self, **more):  # noqa: ANN003 - RunOptions' own fields
        from pctfleet.inventory import parse_extra_vars
        from pctfleet.run.engine import RunOptions

        given = {"check": self.check, "diff": self.diff, **more}
        return RunOptions(
            tags=split_tags(self.tags),
            skip_tags=split_tags(self.skip_tags),
            extra_vars=parse_extra_vars(self.extra_vars or []),
            **given,
        )


@dataclass
class Output:
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="More detail; repeat.")
    ] = 0
    journal_dir: Annotated[
        Path | None,
        typer.Option(
            "--journal-dir",
            help="Where run journals go.",
            show_default="~/.local/state/pctfleet/runs",
        ),
    ] = None


@dataclass
class Lock:
    lock_wait: Annotated[
        float,
        typer.Option(
            "--lock-wait",
            min=0,
            help="Seconds to wait for another run's lock on a container before giving up on it.",
        ),
    ] = 300.0
    lock_lease: Annotated[
        float,
        typer.Option(
            "--lock-lease",
            min=1,
            hidden=True,
            help="Seconds a run keeps a container's lock between two of its calls.",
        ),
    ] = 60.0


Forks = Annotated[int, typer.Option("--forks", "-f", min=1, help="Containers worked on at once.")]
DEFAULT_PLAYBOOK = Path("playbooks/site.yml")


def default_playbook(playbook: Path) -> Path:
    """The default playbook is found in the working folder, else the one shipped with us."""
    if playbook != DEFAULT_PLAYBOOK or playbook.exists():
        return playbook
    shipped = Path(__file__).resolve().parent.parent / "data" / "playbooks" / "site.yml"
    return shipped if shipped.exists() else playbook
