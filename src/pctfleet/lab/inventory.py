"""The lab's `inventory.yml`, in the format pctfleet's inventory parser reads."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pctfleet.lab.model import LabInfo
from pctfleet.lab.rootfs import INITS, SUITES, Recipe

STANDIN = Path(__file__).resolve().parent / "sglang_standin.py"
FLASHINFER = "flashinfer-python==0.7.4"


def lab_vars() -> list[str]:
    """What differs on the lab: no GPU, so flashinfer alone and an SGLang stand-in."""
    return [
        "vars:",
        "  # No GPU here: flashinfer alone (for its bundled CCCL, without torch),",
        "  # and a stand-in that answers like `python -m sglang.launch_server`.",
        f'  serving_packages: ["{FLASHINFER}"]',
        '  serving_pip_extra_args: "--no-deps"',
        f"  sglang_standin: {STANDIN}",
        "  server_module: sglang_standin",
    ]


def server_port(node_index: int, ctid: int) -> int:
    """Lab containers share the host's network: each server needs its own port."""
    return 30000 + node_index * 100 + (ctid - 200)


HEADER = "# pctfleet lab inventory (written by `pctfleet lab up`)"


def flavour_groups(flavours: Mapping[tuple[str, int], Recipe]) -> list[str]:
    """One group per suite and per init that has members, e.g. `--limit trixie`."""
    lines = []
    for name in (*SUITES, *INITS):
        members = [
            f"{node}/{ctid}"
            for (node, ctid), recipe in sorted(flavours.items())
            if name in (recipe.suite, recipe.init)
        ]
        if members:
            lines += [f"  {name}:", f"    containers: [{', '.join(members)}]"]
    return lines


def render_inventory(
    info: LabInfo, port: int, flavours: Mapping[tuple[str, int], Recipe] | None = None
) -> str:
    # Written by hand rather than yaml.dump: the layout (flow maps per
    # container, the header comment) is part of the documented format.
    lines = [
        HEADER,
        "defaults:",
        "  user: root",
        f"  port: {port}",
        f"  identity: {info.identity}",
        f"  known_hosts: {info.known_hosts}",
        *lab_vars(),
        "nodes:",
    ]
    for index, node in enumerate(info.nodes, start=1):
        lines += [f"  {node.name}:", f"    address: {node.address}", "    containers:"]
        short = node.name.removeprefix("node")
        lines += [
            f"      {ctid}: {{name: n{short}-ct{ctid}, vars: {{server_port: "
            f"{server_port(index, ctid)}}}}}"
            for ctid in node.containers
        ]
    names = ", ".join(node.name for node in info.nodes)
    lines += ["groups:", "  lab:", f"    nodes: [{names}]", *flavour_groups(flavours or {})]
    return "\n".join(lines) + "\n"
