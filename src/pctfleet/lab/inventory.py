"""The lab's `inventory.yml`, in the format pctfleet's inventory parser reads."""

from __future__ import annotations

from .model import LabInfo

HEADER = "# pctfleet lab inventory (written by `pctfleet lab up`)"


def render_inventory(info: LabInfo, port: int) -> str:
    # Written by hand rather than yaml.dump: the layout (flow maps per
    # container, the header comment) is part of the documented format.
    lines = [
        HEADER,
        "defaults:",
        "  user: root",
        f"  port: {port}",
        f"  identity: {info.identity}",
        f"  known_hosts: {info.known_hosts}",
        "nodes:",
    ]
    for node in info.nodes:
        lines += [f"  {node.name}:", f"    address: {node.address}", "    containers:"]
        short = node.name.removeprefix("node")
        lines += [f"      {ctid}: {{name: n{short}-ct{ctid}}}" for ctid in node.containers]
    names = ", ".join(node.name for node in info.nodes)
    lines += ["groups:", "  lab:", f"    nodes: [{names}]"]
    return "\n".join(lines) + "\n"
