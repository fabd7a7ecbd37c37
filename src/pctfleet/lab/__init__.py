"""A local Proxmox-like lab: sshd "nodes" with a `pct` shim over real LXC containers."""

from typing import Any

from pctfleet.lab.model import (
    DEFAULT_STATE_DIR,
    ContainerStatus,
    LabError,
    LabInfo,
    LabStatus,
    NodeInfo,
    NodeStatus,
)


def __getattr__(name: str) -> Any:
    # The lab's machinery (rootfs, containers, sshd) loads only when used: the
    # CLI registers `lab` commands without paying for them on every start.
    if name == "Lab":
        from pctfleet.lab.lab import Lab

        return Lab
    raise AttributeError(name)


__all__ = [
    "DEFAULT_STATE_DIR",
    "ContainerStatus",
    "Lab",
    "LabError",
    "LabInfo",
    "LabStatus",
    "NodeInfo",
    "NodeStatus",
]
