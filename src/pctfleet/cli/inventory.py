"""`pctfleet inventory discover`: the containers the nodes report, as a table,
JSON, or a native inventory to start from."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import typer

from pctfleet import exitcodes
from pctfleet.cli.groups import flag, grouped, opt, use
from pctfleet.cli.options import Connection, Selection, fail
from pctfleet.textout import visible

inventory_app = typer.Typer(
    no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]}
)
COLUMNS = ("node", "ctid", "name", "status", "tags", "ostype", "cores", "memory")


def _nodes(inventory: list[Path] | None, hosts: str | None) -> list:
    """The nodes to read: an inventory's (with their SSH settings) or `--host`'s."""
    from pctfleet.inventory import load_inventory
    from pctfleet.inventory.checks import check_address
    from pctfleet.inventory.model import Node

    if not inventory and not hosts:
        from pctfleet.cli.options import configured_inventory

        inventory = configured_inventory()
    if bool(inventory) == bool(hosts):
        raise fail(
            "give either -i INVENTORY or --host H[,H2...] (or 'inventory =' in ansible.cfg)",
            exitcodes.BAD_OPTIONS,
        )
    if inventory:
        return list(load_inventory(inventory).nodes.values())
    names = [h.strip() for h in (hosts or "").split(",") if h.strip()]
    for name in names:
        if problem := check_address(name):
            raise fail(f"--host {name!r}: {problem}", exitcodes.BAD_OPTIONS)
    return [Node(name, name) for name in dict.fromkeys(names)]


def native_inventory(found: Sequence[Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A native inventory of `rows`: each node with its settings, each container by
    ctid, named after its host name where that is a valid name not used before."""
    from pctfleet.inventory.checks import NAME_RE

    used: set[str] = set()
    nodes: dict[str, Any] = {}
    for f in found:
        node = f.node
        entry: dict[str, Any] = {"address": node.address}
        for key in ("user", "port", "identity", "known_hosts"):
            if getattr(node, key) not in (None, "root", 22):
                entry[key] = getattr(node, key)
        if node.ssh_options:
            entry["ssh_options"] = dict(node.ssh_options)
        cts: dict[int, Any] = {}
        for row in (r for r in rows if r["node"] == node.name):
            name = row["name"]
            ok = isinstance(name, str) and NAME_RE.match(name) and name not in used
            cts[row["ctid"]] = {"name": name} if ok else None
            used.add(name) if ok else None
        entry["containers"] = cts
        nodes[node.name] = entry
    return {"nodes": nodes}


def _table(rows: Sequence[dict[str, Any]]) -> str:
    cells = [[str(r[c] if c != "tags" else ";".join(r[c])) for c in COLUMNS] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(COLUMNS, widths, strict=True))]
    for r, row in zip(rows, cells, strict=True):
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        lines += [f"    {line}" for line in (*r["devices"], *r["mounts"])]
    return "\n".join(visible(line) for line in lines)


@dataclass
class DiscoverOptions:
    panel: ClassVar[str] = "Discovery"

    inventory: list[Path] | None = opt(
        "-i --inventory", "Discover on this inventory's nodes (repeatable, as for every command)."
    )
    host: str | None = opt("--host", "Node addresses, comma-separated.")
    tag: list[str] | None = opt("--tag", "Only containers with this tag (repeatable).")
    status: str | None = opt("--status", "Only 'running' or 'stopped' containers.")
    as_json: bool = flag("--json", "One JSON document on stdout.")
    as_yaml: bool = flag("--yaml", "A native inventory on stdout.")
    forks: int = opt("--forks -f", "Nodes read at once.", 10, min=1)


@inventory_app.command("discover")
@grouped(
    opts=DiscoverOptions,
    conn=use(
        Connection,
        *("user", "port", "identity", "known_hosts", "accept_new_host_keys"),
        *("timeout", "connect_timeout"),
    ),
    # An inventory's group_vars/host_vars may be vault-encrypted: they are read with it.
    sel=use(Selection, *Selection.VAULT_FIELDS),
)
def discover_command(*, opts: DiscoverOptions, conn: Connection, sel: Selection) -> int:
    """List every container on the nodes, from `pct list` and `pct config` (one SSH
    command per node; nothing on the node is changed).

    Exit 0, or 3 when a node's containers could not be read (never shown as none).

    Examples:

      pctfleet inventory discover --host 10.1.2.6 --tag gpu --yaml
      pctfleet inventory discover -i /var/lib/pctfleet-lab/inventory.yml --status running
      pctfleet inventory discover -i /var/lib/pctfleet-lab/inventory.yml --json
    """
    import yaml

    from pctfleet.inventory.discover import as_rows, failures, read_nodes, rule_from

    if opts.as_json and opts.as_yaml:
        raise fail("--json and --yaml both print on stdout: give one", exitcodes.BAD_OPTIONS)
    try:
        rule = rule_from([t for v in opts.tag or [] for t in v.split(",") if t], opts.status)
    except ValueError as exc:
        raise fail(f"--status: {exc}", exitcodes.BAD_OPTIONS) from None
    sel.unlock()
    found = read_nodes(_nodes(opts.inventory, opts.host), conn.options(), opts.forks)
    rows = as_rows([f for f in found if not f.error], rule)
    if opts.as_json:
        errors = [{"node": f.node.name, "error": f.error} for f in found if f.error]
        nodes = [{"node": f.node.name, "gpu": f.gpu.as_json()} for f in found if f.gpu]
        typer.echo(json.dumps({"containers": rows, "errors": errors, "nodes": nodes}, indent=2))
    elif opts.as_yaml:
        good = [f for f in found if not f.error]
        typer.echo(yaml.safe_dump(native_inventory(good, rows), sort_keys=False), nl=False)
    elif rows:
        typer.echo(_table(rows))
    for line in failures(found):
        typer.secho(f"error: {visible(line)}", err=True, fg="red")
    return exitcodes.UNREACHABLE if any(f.error for f in found) else exitcodes.OK


@dataclass
class ShowOptions:
    panel: ClassVar[str] = "Output"

    as_json: bool = flag("--json", "One JSON document on stdout.")


@inventory_app.command("show")
@grouped(
    opts=ShowOptions,
    conn=use(Connection, "user", "port", "identity"),
    sel=use(Selection, "inventory", "host", "ct", "limit", *Selection.VAULT_FIELDS),
)
def show_command(*, opts: ShowOptions, conn: Connection, sel: Selection) -> int:
    """The containers a command would select, and how each node would be logged in to
    (nothing is contacted).

    The login is the one every other command uses: --user/--port/--identity, then the
    inventory (ansible_user, ansible_port, ansible_ssh_private_key_file, ...), then, for
    an Ansible inventory, ansible.cfg and ANSIBLE_* (remote_user, remote_port,
    private_key_file), then ~/.ssh/config. Exit 0, also where --limit leaves nothing
    (it lists nothing, as ansible-inventory --limit does; every other command refuses
    that selection, exit 5).

    Examples:

      pctfleet inventory show -i inventory.yml --limit canary
      pctfleet inventory show --json
    """
    from pctfleet.cli.logins import login_rows, login_table
    from pctfleet.errors import EmptySelection

    try:
        _, selected = sel.select()
    except EmptySelection as exc:  # listed as nothing, as ansible-inventory --limit lists it
        selected = []
        if not opts.as_json:
            typer.secho(f"{exc} (other commands refuse this, exit 5)", err=True)
    nodes, containers = login_rows(selected, conn.options())
    if opts.as_json:
        typer.echo(json.dumps({"nodes": nodes, "containers": containers}, indent=2))
    else:
        typer.echo(login_table(nodes, containers))
    return exitcodes.OK
