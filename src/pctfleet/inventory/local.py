"""`--connection local`: this machine as the one host, with no inventory file.

Like Ansible's implicit `localhost` with `connection: local`, the host is named
`localhost`; it stands on a node named `local` with container id 0, so its
JSON rows (node, ctid, name) and journal key (`local/0`) have the same shape as
a container's. It has no vars of its own: playbook `defaults:` and `-e` decide.
Every play runs on it, whatever the play's `hosts:` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pctfleet.inventory.model import Container, Inventory, Node

LOCAL_NODE = "local"
LOCAL_HOST = "localhost"


@dataclass(frozen=True)
class LocalNode(Node):
    """This machine, reached without SSH or pct (`build_fleet` gives it a LocalTarget)."""


class LocalInventory(Inventory):
    """One host, this machine; any `hosts:` pattern selects it."""

    def select(self, limit: Any) -> list[Container]:
        return list(self.containers)

    def matching(self, pattern: Any, *, files: bool = False) -> list[Container]:
        return list(self.containers)


def local_inventory() -> LocalInventory:
    node = LocalNode(LOCAL_NODE, LOCAL_HOST)
    host = Container(node, 0, LOCAL_HOST, host=LOCAL_HOST)
    return LocalInventory({LOCAL_NODE: node}, [host], source="--connection local")
