"""What `pctfleet inventory show` prints: each selected node's login as the transport
would resolve it, and the containers on it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pctfleet.textout import visible
from pctfleet.transport.options import ConnectOptions


def login_rows(selected: Sequence, cli: ConnectOptions) -> tuple[list[dict], list[dict]]:  # noqa: ANN001
    """(nodes, containers) as JSON-ready rows; a node's login resolved with the command
    line on top of the inventory, then ~/.ssh/config, as the commands log in."""
    from pctfleet.inventory.local import LocalNode
    from pctfleet.transport.connections import node_options
    from pctfleet.transport.options import resolve

    nodes: dict[str, dict[str, Any]] = {}
    for container in selected:
        node = container.node
        if node.name in nodes or isinstance(node, LocalNode):
            continue
        target = resolve(node.name, node.address, node_options(node, cli))
        nodes[node.name] = {
            "node": node.name,
            "address": target.hostname,
            "port": target.port,
            "user": target.user,
            "identities": list(target.identities),
            "proxy_jump": target.proxy_jump,
        }
    containers = [
        {"name": c.name or c.key, "node": c.node.name, "ctid": c.ctid, "groups": list(c.groups)}
        for c in selected
    ]
    return list(nodes.values()), containers


def login_table(nodes: Sequence[dict], containers: Sequence[dict]) -> str:
    """One block per node: its login line, then its containers."""
    lines: list[str] = []
    for node in nodes:
        keys = ", ".join(node["identities"]) or "ssh-agent and ~/.ssh keys"
        via = f" via {node['proxy_jump']}" if node["proxy_jump"] else ""
        lines.append(
            f"{node['node']}: {node['user']}@{node['address']}:{node['port']}{via} (key: {keys})"
        )
        for row in (c for c in containers if c["node"] == node["node"]):
            groups = f"  [{', '.join(row['groups'])}]" if row["groups"] else ""
            lines.append(f"  {row['ctid']}  {row['name']}{groups}")
    return "\n".join(visible(line) for line in lines)
