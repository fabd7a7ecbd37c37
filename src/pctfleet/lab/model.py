"""Data the lab hands out: what `up` made, and what `status` sees."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_STATE_DIR = Path("/var/lib/pctfleet-lab")


class LabError(Exception):
    """A lab operation failed; the message says what to do about it."""


class inside:  # noqa: N801 - used like @property
    """A read-only path attribute: `name` in the folder that attribute `folder` holds."""

    def __init__(self, folder: str, name: str) -> None:
        self.folder, self.name = folder, name

    def __get__(self, obj: Any, owner: type | None = None) -> Path:
        return getattr(obj, self.folder) / self.name


@dataclass
class NodeInfo:
    name: str
    address: str
    port: int
    containers: list[int] = field(default_factory=list)


@dataclass
class LabInfo:
    state_dir: Path
    inventory: Path
    identity: Path
    known_hosts: Path
    nodes: list[NodeInfo] = field(default_factory=list)

    def node(self, name: str) -> NodeInfo:
        for node in self.nodes:
            if node.name == name:
                return node
        raise LabError(f"no node named {name!r} in the lab at {self.state_dir}")


@dataclass
class ContainerStatus:
    ctid: int
    lxc_name: str
    hostname: str
    state: str  # "running", "stopped" or "missing"
    suite: str = "bookworm"  # or "trixie"
    init: str = "minimal"  # the lab's tiny PID 1, or "systemd"

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass
class NodeStatus:
    name: str
    address: str
    port: int
    sshd_running: bool
    sshd_pid: int | None
    relay: str | None  # "hang" or "delay" while a fault relay is in front of sshd
    containers: list[ContainerStatus] = field(default_factory=list)


@dataclass
class LabStatus:
    state_dir: Path
    exists: bool
    nodes: list[NodeStatus] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """True when every node's sshd and every container is running."""
        return self.exists and all(
            n.sshd_running and all(c.running for c in n.containers) for n in self.nodes
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["state_dir"] = str(self.state_dir)
        data["healthy"] = self.healthy
        return data
