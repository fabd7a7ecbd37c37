"""The `pctfleet` command line: parse, call the library, render. Nothing else."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from . import adhoc, exitcodes
from . import cliopts as o
from .errors import InputError
from .targets import build_fleet

app = typer.Typer(
    name="pctfleet",
    help="Bring GPU containers on Proxmox VE to a declared state: a matched CUDA toolchain, "
    "the CCCL overlay, link fixes, a clean flashinfer JIT cache and a healthy SGLang server.\n\n"
    "Nodes are reached over SSH (host keys checked), containers through 'pct exec'. "
    "Try it without Proxmox: 'pctfleet lab up'.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"error: {message}", err=True, fg="red")
    return typer.Exit(code)


def select_containers(inventory: Path | None, host: str | None, ct: str | None, limit: str | None):
    """The containers a command works on: from -i INVENTORY or --host/--ct."""
    from .inventory import adhoc_inventory, load_inventory, parse_ctids

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
    return inv.select(limit)


@app.command("exec", context_settings={"allow_interspersed_args": False})
def exec_command(
    command: Annotated[
        list[str],
        typer.Argument(help="The command and its arguments, after '--'.", show_default=False),
    ],
    inventory: o.Inventory = None,
    host: o.Host = None,
    ct: o.Ct = None,
    limit: o.Limit = None,
    user: o.User = None,
    port: o.Port = None,
    identity: o.Identity = None,
    known_hosts: o.KnownHosts = None,
    accept_new_host_keys: o.AcceptNew = False,
    timeout: o.Timeout = 600.0,
    connect_timeout: o.ConnectTimeout = 10.0,
    forks: Annotated[int, typer.Option("--forks", "-f", min=1, help="Containers at once.")] = 10,
    no_stdin: Annotated[
        bool, typer.Option("--no-stdin", "-n", help="Do not forward stdin.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> int:
    """Run a command in containers, in parallel; arguments arrive exactly as given.

    Example: pctfleet exec --host 10.1.2.6 --ct 200,201 -- nvidia-smi -L

    One container: exits with the command's own exit code. Several: 0 if all
    succeeded, 3 if a node was unreachable, 2 otherwise. Each container's
    output lines are prefixed with node/ctid.
    """
    containers = select_containers(inventory, host, ct, limit)
    cli = o.connect_options(
        user, port, identity, known_hosts, accept_new_host_keys, timeout, connect_timeout
    )
    fleet = build_fleet(containers, cli)
    stdin = None if no_stdin or sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer
    if stdin is not None and len(fleet.targets) > 1:
        stdin = stdin.read()  # every container gets the same bytes
    plan = _output_plan(as_json, len(fleet.targets))
    try:
        outcomes = adhoc.run_exec(fleet.targets, command, stdin, plan, forks)
    finally:
        fleet.close()
    if as_json:
        summary = {
            s: sum(1 for x in outcomes if x.status == s) for s in {x.status for x in outcomes}
        }
        document = {
            "results": [x.as_json() for x in outcomes],
            "summary": summary,
            "connections": fleet.pool.connections_opened(),
        }
        typer.echo(json.dumps(document, indent=2))
    else:
        for outcome in outcomes:
            if outcome.message:
                typer.secho(
                    f"{outcome.container}: {outcome.status}: {outcome.message}", err=True, fg="red"
                )
    return adhoc.exit_code(outcomes)


def _output_plan(as_json: bool, count: int) -> adhoc.OutputPlan:
    if as_json:
        return adhoc.OutputPlan("collect")
    mode = "raw" if count == 1 else "prefix"
    return adhoc.OutputPlan(mode, sys.stdout.buffer, sys.stderr.buffer)


def _register_subcommands() -> None:
    from .lab.cli import lab_app

    app.add_typer(lab_app, name="lab", help="A local Proxmox-like lab: sshd nodes, LXC containers.")


_register_subcommands()


def _invoke(
    application: typer.Typer, args: list[str] | None = None, prog: str | None = None
) -> int:
    """Run the app with our exit codes: 5 for bad options, 4 for bad input, 99 for Ctrl-C."""
    try:
        result = application(args=args, prog_name=prog, standalone_mode=False)
    except click.exceptions.UsageError as exc:
        exc.show()
        return exitcodes.BAD_OPTIONS
    except click.exceptions.Abort:
        typer.secho("interrupted", err=True, fg="red")
        return exitcodes.INTERRUPTED
    except InputError as exc:
        typer.secho(f"error: {exc}", err=True, fg="red")
        return exitcodes.PARSE_ERROR
    except KeyboardInterrupt:
        typer.secho("interrupted", err=True, fg="red")
        return exitcodes.INTERRUPTED
    return result if isinstance(result, int) else exitcodes.OK


def main() -> None:
    sys.exit(_invoke(app))


def provision_main() -> None:
    """`provision`: the default playbook against one container (see `provision --help`)."""
    sys.exit(_invoke(app, ["provision", *sys.argv[1:]], prog="provision"))
