"""Shell completion from the inventory: --limit, --host and --ct.

Completion reads the inventory named earlier on the line (-i), else the lab's,
as YAML only: it never connects anywhere, and a file it cannot read completes
nothing rather than raising into the shell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

LAB_INVENTORY = Path("/var/lib/pctfleet-lab/inventory.yml")


def _inventory(ctx: typer.Context) -> Any:  # noqa: ANN401 - an Inventory, imported lazily
    given = ctx.params.get("inventory") or [LAB_INVENTORY]
    try:
        from pctfleet.inventory import load_inventory

        paths = [given] if isinstance(given, str | Path) else given
        return load_inventory([Path(path).expanduser() for path in paths])
    except Exception:  # noqa: BLE001 - a broken inventory completes nothing
        return None


def complete_limit(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Groups, nodes, node/ctid and names; after ':' or ',' and a leading '!' or '&' too."""
    inv = _inventory(ctx)
    if inv is None:
        return []
    cut = max(incomplete.rfind(":"), incomplete.rfind(","))
    head, word = incomplete[: cut + 1], incomplete[cut + 1 :]
    sign = word[:1] if word[:1] in "!&" and word else ""
    head, word = head + sign, word[len(sign) :]
    items = [(name, "group") for name in inv.groups]
    items += [(name, f"node {node.address}") for name, node in inv.nodes.items()]
    for ct in inv.containers:
        items += [(ct.key, ct.name or "container")]
        items += [(ct.name, ct.key)] if ct.name else []
    return [(head + item, help_) for item, help_ in items if item.startswith(word)]


def complete_host(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Node addresses, each with its node name."""
    inv = _inventory(ctx)
    nodes = inv.nodes.values() if inv is not None else []
    return [(n.address, n.name) for n in nodes if n.address.startswith(incomplete)]


def complete_ct(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Container ids of the --host node (of every node without one), after any commas."""
    inv = _inventory(ctx)
    if inv is None:
        return []
    host = ctx.params.get("host")
    head, _, word = incomplete.rpartition(",")
    prefix = f"{head}," if head else ""
    cts = [c for c in inv.containers if host in (None, c.node.address, c.node.name)]
    ids = {str(c.ctid): c.name or c.key for c in cts}
    return [(prefix + i, name) for i, name in sorted(ids.items()) if i.startswith(word)]
