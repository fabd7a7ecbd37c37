"""`pctfleet lab ...`: bring the local lab up, look at it, take it down."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from pctfleet.lab.lab import DEFAULT_STATE_DIR, Lab
from pctfleet.lab.model import LabError, LabInfo, LabStatus
from pctfleet.textout import line

lab_app = typer.Typer(
    help="A local Proxmox-like lab: sshd nodes with `pct` over real LXC containers.",
    no_args_is_help=True,
)
out = Console()
err = Console(stderr=True)

T = TypeVar("T")

StateDir = Annotated[
    Path, typer.Option("--state-dir", help="Where the lab keeps its keys, configs and state.")
]
AddressBase = Annotated[
    str | None,
    typer.Option(
        "--address-base",
        help="Nodes get <base>.1, <base>.2, ... in 127/8.",
        show_default="the existing lab's, else 127.0.10",
    ),
]


def _guard(action: Callable[[], T]) -> T:
    """One clear line on stderr and exit 1 for lab errors; never a traceback."""
    try:
        return action()
    except LabError as exc:
        err.print(line(("error:", "bold red"), f" {exc}"), soft_wrap=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None


@lab_app.command()
def up(
    nodes: Annotated[int, typer.Option("--nodes", "-n", help="Number of nodes.")] = 2,
    containers: Annotated[int, typer.Option("--containers", "-c", help="Containers per node.")] = 2,
    state_dir: StateDir = DEFAULT_STATE_DIR,
    address_base: AddressBase = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            help="sshd port of every node.",
            show_default="the existing lab's, else 22",
        ),
    ] = None,
) -> None:
    """Bring the lab to its declared state: every node and container running."""
    started = time.monotonic()

    def bring_up() -> LabInfo:
        lab = Lab(state_dir, address_base, port, say=lambda msg: err.print(line(msg)))
        return lab.up(nodes=nodes, containers=containers)

    info = _guard(bring_up)
    _print_usage(info, time.monotonic() - started)


def _print_usage(info: LabInfo, seconds: float) -> None:
    total = sum(len(n.containers) for n in info.nodes)
    out.print(
        line(
            ("lab up", "green"), f" in {seconds:.2f} s: {len(info.nodes)} nodes, {total} containers"
        )
    )
    for node in info.nodes:
        cts = ", ".join(str(c) for c in node.containers)
        out.print(line(f"  {node.name}  {node.address}:{node.port}  CTs {cts}"))
    first = info.nodes[0]
    out.print(line(f"\ninventory:   {info.inventory}"))
    out.print(line(f"identity:    {info.identity}"))
    out.print(line(f"known_hosts: {info.known_hosts}"))
    out.print(line("\ntry:"))
    for example in (
        f"  pctfleet exec -i {info.inventory} -- hostname",
        f"  pctfleet exec --host {first.address} --ct {first.containers[0]}"
        f" --identity {info.identity} --known-hosts {info.known_hosts} -- hostname",
        f"  provision -i {info.inventory}",
        f"  pctfleet doctor -i {info.inventory} --limit {first.name}/{first.containers[0]}",
    ):
        out.print(line(example), soft_wrap=True)
    out.print(
        line(
            f"  ssh -i {info.identity} -o UserKnownHostsFile={info.known_hosts}"
            f" root@{first.address} pct list"
        ),
        soft_wrap=True,
    )


@lab_app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Show each node's sshd and each container's state."""
    result = _guard(lambda: Lab(state_dir).status())
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        _print_status(result)
    if result.exists and not result.healthy:
        raise typer.Exit(3)  # like `systemctl status`: something is down


def _print_status(result: LabStatus) -> None:
    if not result.exists:
        out.print(line(f"no lab in {result.state_dir} (run `pctfleet lab up`)"))
        return
    table = Table(title=line(f"lab in {result.state_dir}"))
    for col in ("node", "address", "sshd", "fault", "containers"):
        table.add_column(col)
    for node in result.nodes:
        sshd = (
            line(("running", "green"), f" ({node.sshd_pid})")
            if node.sshd_running
            else line(("down", "red"))
        )
        cts = line()
        for c in node.containers:
            state = ("running", "green") if c.running else (c.state, "red")
            cts.append_text(line("  " if cts else "", f"{c.ctid}:", state))
        address = f"{node.address}:{node.port}"
        table.add_row(line(node.name), line(address), sshd, line(node.relay or ""), cts)
    out.print(table)


@lab_app.command()
def down(state_dir: StateDir = DEFAULT_STATE_DIR) -> None:
    """Stop what the lab started and remove its state (the rootfs cache stays)."""
    _guard(lambda: Lab(state_dir).down())
    out.print(line(f"lab in {state_dir} is down"))
