"""A local Proxmox-like lab: sshd "nodes" with a `pct` shim over real LXC containers."""

from pctfleet.lab.lab import DEFAULT_STATE_DIR, Lab
from pctfleet.lab.model import ContainerStatus, LabError, LabInfo, LabStatus, NodeInfo, NodeStatus

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
