"""`pctfleet lab ...`: bring the local lab up, look at it, take it down."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from pctfleet.lab.model import DEFAULT_STATE_DIR, ContainerStatus, LabError, LabInfo, LabStatus
from pctfleet.textout import line

if TYPE_CHECKING:
    from pctfleet.lab.lab import Lab

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

Suite = Annotated[
    str,
    typer.Option(
        "--suite",
        help="Debian release in the container: bookworm (12, Python 3.11, PVE 8 templates) "
        "or trixie (13, Python 3.13, PVE 9 templates).",
    ),
]
Init = Annotated[
    str,
    typer.Option(
        "--init",
        help="PID 1: minimal (a tiny reaper, starts in well under a second) or systemd "
        "(boots like Proxmox's templates; about 6 s and more memory).",
    ),
]


def _lab(*args: object, **kwargs: object) -> Lab:
    """The lab, imported only when a `lab` command runs: other commands start faster."""
    from pctfleet.lab.lab import Lab

    return Lab(*args, **kwargs)  # type: ignore[arg-type]


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
    suite: Suite = "bookworm",
    init: Init = "minimal",
) -> None:
    """Bring the lab to its declared state: every node and container running.

    --suite and --init apply to containers this run creates; existing
    containers keep the flavour they were made with (recorded in lab.json).

    Examples:

      pctfleet lab up
      pctfleet lab up --nodes 2 --containers 3 --suite trixie
      pctfleet lab up --state-dir /tmp/lab18 --address-base 127.0.18 --nodes 1
    """
    started = time.monotonic()

    def bring_up() -> LabInfo:
        lab = _lab(state_dir, address_base, port, say=_say)
        return lab.up(nodes=nodes, containers=containers, suite=suite, init=init)

    info = _guard(bring_up)
    _print_usage(info, time.monotonic() - started)


def _say(msg: str) -> None:
    err.print(line(msg))


@lab_app.command()
def add(
    node: Annotated[str, typer.Argument(help="Node to add it to, e.g. node1.")],
    ctid: Annotated[
        int, typer.Argument(help="Its CTID, 200..299 (server port 30000+node*100+ctid-200).")
    ],
    suite: Suite = "bookworm",
    init: Init = "minimal",
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Add one container to a node of a running lab, of the suite and init given.

    It gets a Proxmox-style CT config, an inventory entry (and groups named after
    its suite and init) and is started. Running it again is a no-op; an existing
    CTID of another flavour is an error.

    Examples:

      pctfleet lab add node1 221 --suite trixie --init systemd
      pctfleet lab add node2 210 --suite trixie
      pctfleet lab add node1 205 --state-dir /tmp/lab18
    """
    started = time.monotonic()
    ct = _guard(lambda: _lab(state_dir, say=_say).add_container(node, ctid, suite, init))
    out.print(
        line(
            ("lab add", "green"),
            f" in {time.monotonic() - started:.2f} s: {node} CT {ct.ctid} ({ct.hostname}), "
            f"{_flavour(ct)}, {ct.state}",
        )
    )


def _flavour(ct: ContainerStatus) -> str:
    return f"{ct.suite}/{ct.init}"


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
    """Show each node's sshd and each container's state (exit 3 if anything is down).

    Examples:

      pctfleet lab status
      pctfleet lab status --json
      pctfleet lab status --state-dir /tmp/lab18
    """
    result = _guard(lambda: _lab(state_dir).status())
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
            cts.append_text(line("\n" if cts else "", f"{c.ctid}:", state, f" {_flavour(c)}"))
        address = f"{node.address}:{node.port}"
        table.add_row(line(node.name), line(address), sshd, line(node.relay or ""), cts)
    out.print(table)


@lab_app.command()
def down(state_dir: StateDir = DEFAULT_STATE_DIR) -> None:
    """Stop what the lab started and remove its state (the rootfs cache stays).

    Examples:

      pctfleet lab down
      pctfleet lab down --state-dir /tmp/lab18
    """
    _guard(lambda: _lab(state_dir).down())
    out.print(line(f"lab in {state_dir} is down"))
