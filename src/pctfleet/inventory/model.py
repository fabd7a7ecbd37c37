"""The inventory model: nodes, the containers on them, groups, and their vars."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pctfleet.errors import EmptySelection
from pctfleet.inventory.limit import Host, match_limit


@dataclass(frozen=True)
class Node:
    """A Proxmox VE host reached over SSH. Hashable; `vars` and `ssh_options`
    do not take part in equality (names are unique within an inventory)."""

    name: str
    address: str
    port: int = 22
    user: str = "root"
    identity: str | None = None
    known_hosts: str | None = None
    ssh_options: Mapping[str, Any] = field(default_factory=dict, compare=False)
    vars: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # Commands at once on this node (sshd's MaxSessions); None: the default, 10.
    max_sessions: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Container:
    """An LXC container `ctid` on `node`; `groups` in variable precedence order.
    `host` is its host name in an Ansible inventory (None in a native one)."""

    node: Node
    ctid: int
    name: str | None = None
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, compare=False)
    host: str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        """`node/ctid`, unique in the inventory, e.g. `pve1/200`."""
        return f"{self.node.name}/{self.ctid}"

    @property
    def inventory_hostname(self) -> str:
        """Ansible's name for it: the host name of an Ansible inventory, else the key
        (native inventories have no host names; playbooks have long matched the key)."""
        return self.host or self.key

    @property
    def label(self) -> str:
        """What to show a person: the name if there is one, else the key."""
        return self.name or self.key


@dataclass(frozen=True)
class Group:
    """A named set of containers. `members` are container keys, including those
    that belong through the group's nodes and (recursively) its children."""

    name: str
    members: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    depth: int = 0
    vars: Mapping[str, Any] = field(default_factory=dict, compare=False)
    priority: int = 1


@dataclass(frozen=True)
class Discovery:
    """Nodes whose containers come from the node itself (`discover:`), and the
    document to read again once they are known (see `inventory.discover`)."""

    rules: Mapping[str, Any]
    doc: Any
    src: Any


class Inventory:
    """Nodes, containers (file order), groups and the `all` vars of one inventory."""

    def __init__(
        self,
        nodes: Mapping[str, Node],
        containers: Sequence[Container],
        groups: Mapping[str, Group] | None = None,
        vars: Mapping[str, Any] | None = None,
        source: str = "<inventory>",
    ) -> None:
        self.nodes: dict[str, Node] = dict(nodes)
        self.containers: list[Container] = list(containers)
        self.groups: dict[str, Group] = dict(groups or {})
        self.vars: dict[str, Any] = dict(vars or {})
        self.source = source
        # group_vars/host_vars folders (inventory.varfiles.VarFiles), in precedence order:
        # the inventory's, then the playbook's.
        self.var_files: list[Any] = []
        self._by_key = {c.key: c for c in self.containers}
        # Set while `discover:` nodes are still unread: `resolve_discovery` reads them.
        self.discovery: Discovery | None = None
        # Rules of the nodes whose containers were discovered, by node name.
        self.rules: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"Inventory({self.source!r}, {len(self.nodes)} nodes, "
            f"{len(self.containers)} containers, {len(self.groups)} groups)"
        )

    def get(self, key: str) -> Container | None:
        """The container with key `node/ctid`, or None."""
        return self._by_key.get(key)

    def select(self, limit: str | Sequence[Any] | None) -> list[Container]:
        """The containers --limit selects, in ansible-core's order: the `all` group's
        (its own hosts, then its children's, level by level; see
        `inventory.limit.ansible_order`), inventory order in a native inventory. The
        limit is an Ansible host pattern (`gpu,!canary`, `gpu:&pve1`, `gpu-*`,
        `~gpu-0[12]`, `gpu[0]`; see `inventory.limit`), where `@FILE` stands for the
        file's lines. An unknown term is an InventoryError; a pattern that leaves none
        of the containers is an EmptySelection, as ansible-playbook refuses a --limit
        that leaves no host."""
        if limit is None or (isinstance(limit, str) and not limit.strip()):
            return self._match((), files=False, walk=True)  # no term: every container
        chosen = self._match(limit, files=True, walk=True)
        if not chosen and self.containers:
            raise EmptySelection(
                f"--limit {limit!r} leaves no container to target in {self.source}"
            )
        return chosen

    def matching(self, pattern: str | Sequence[Any]) -> list[Container]:
        """The containers a host pattern (a play's `hosts:`, a string or a list of them)
        matches, in the order ansible-core gives a play's hosts: each plain term adds
        the hosts it matches in its own order (a group: its own hosts, then its
        children's), `&` and `!` terms filter; inventory order in a native inventory.
        None is an answer, as a play may match no host."""
        return self._match(pattern, files=False, walk=False)

    def _match(self, pattern: str | Sequence[Any], *, files: bool, walk: bool) -> list[Container]:
        hosts = [Host(c.key, c.host, c.ctid, c.node.name, c.name) for c in self.containers]
        keys = match_limit(
            pattern, hosts, self.groups, self.nodes, self.source, files=files, walk=walk
        )
        return [self._by_key[key] for key in keys]

    def vars_for(
        self, container: Container, extra_vars: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Variables of one container, later sources winning per top-level key:
        all < groups (parents first, siblings by name) < group_vars files (`all`,
        then the groups) < node < container < host_vars files < extra, as
        ansible-core orders them. Built-ins (`inventory_hostname`, `node_name`, ...)
        are set last."""
        merged: dict[str, Any] = dict(self.vars)
        for name in container.groups:
            merged.update(self.groups[name].vars)
        from_groups, from_host = ({}, {})
        if self.var_files:
            from pctfleet.inventory.varfiles import merged_files

            from_groups, from_host = merged_files(self.var_files, container.groups, container.host)
        merged.update(from_groups)
        merged.update(container.node.vars)
        merged.update(container.vars)
        merged.update(from_host)
        merged.update(extra_vars or {})
        merged.update(builtin_vars(container))
        return merged


def builtin_vars(container: Container) -> dict[str, Any]:
    """Variables every container gets from its place in the inventory."""
    return {
        "inventory_hostname": container.inventory_hostname,
        "node_name": container.node.name,
        "node_address": container.node.address,
        "ctid": container.ctid,
        "ct_name": container.name,
        "group_names": sorted(container.groups),
    }
