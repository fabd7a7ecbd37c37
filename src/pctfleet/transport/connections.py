"""From inventory containers to runnable targets sharing one connection per node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pctfleet.inventory.local import LocalNode
from pctfleet.run.scheduler import DEFAULT_NODE_LIMIT
from pctfleet.transport.base import Target
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.options import ConnectOptions, ssh_option_pairs, with_overrides
from pctfleet.transport.pct import PctTarget

if TYPE_CHECKING:
    from pctfleet.transport.ssh import NodePool


@dataclass
class Fleet:
    """The targets of one run and the pool their connections live in."""

    pool: NodePool
    targets: list[Target]

    def close(self) -> None:
        self.pool.close()


def node_options(node, cli: ConnectOptions) -> ConnectOptions:  # noqa: ANN001
    """The node's inventory settings, with anything given on the command line on top."""
    from_inventory = with_overrides(
        ConnectOptions(),
        user=getattr(node, "user", None),
        port=getattr(node, "port", None),
        identity=getattr(node, "identity", None),
        known_hosts=getattr(node, "known_hosts", None),
        ssh_options=ssh_option_pairs(getattr(node, "ssh_options", None) or {}),
        max_sessions=getattr(node, "max_sessions", None),
    )
    return with_overrides(
        from_inventory,
        user=cli.user,
        port=cli.port,
        identity=cli.identity,
        known_hosts=cli.known_hosts,
        accept_new_host_keys=cli.accept_new_host_keys or None,
        connect_timeout=cli.connect_timeout,
        command_timeout=cli.command_timeout,
        ssh_config=cli.ssh_config,
        persist=cli.persist or None,
    )


def container_limit(container) -> int:  # noqa: ANN001
    """Commands at once on the container's node, as the inventory says (else sshd's 10)."""
    return getattr(container.node, "max_sessions", None) or DEFAULT_NODE_LIMIT


def _nodes(containers: Iterable, cli: ConnectOptions) -> list[tuple[str, str, ConnectOptions]]:
    """(name, address, options) of each SSH node the containers are on, once each."""
    nodes = {c.node.name: c.node for c in containers if not isinstance(c.node, LocalNode)}
    return [(n.name, n.address, node_options(n, cli)) for n in nodes.values()]


def start_logins(containers: Iterable, cli: ConnectOptions) -> int:
    """Log in to the containers' nodes in the background (transport/early.py) while
    the command still loads and renders; the run's connections take those logins.
    With --persist, nodes whose login the keeper holds (transport/keep.py) need none."""
    from pctfleet.transport import early

    containers = list(containers)
    nodes = _nodes(containers, cli)
    _held.clear()  # a new command: ask the keeper afresh
    if cli.persist > 0:
        held = _kept_logins(nodes)
        nodes = [node for node in nodes if node not in held]
    per_node = Counter(c.node.name for c in containers)
    return early.start(nodes, {node: per_node[node[0]] for node in nodes})


_held: dict = {}  # the keeper's answer for this command's nodes, asked once


def _kept_logins(nodes: list) -> dict:
    from pctfleet.transport import keep

    path = keep.keeper_socket()
    missing = [node for node in nodes if node not in _held]
    if path is not None and missing:
        found = keep.lookup(path, missing)
        _held.update({node: found.get(node) for node in missing})
    return {node: _held[node] for node in nodes if _held.get(node) is not None}


def build_fleet(containers: Iterable, cli: ConnectOptions) -> Fleet:
    """One PctTarget per container; containers of one node share its connection.

    The host of `--connection local` gets a LocalTarget: no SSH, no pct.
    """
    containers = list(containers)
    pool = _pool(_nodes(containers, cli), cli)
    targets: list[Target] = []
    for container in containers:
        node = container.node
        if isinstance(node, LocalNode):
            targets.append(LocalTarget(container.key, cli.command_timeout))
            continue
        connection = pool.get(node.name, node.address, node_options(node, cli))
        targets.append(PctTarget(connection, container.ctid))
    return Fleet(pool, targets)


def _pool(nodes: list, cli: ConnectOptions) -> NodePool:
    """The nodes' connections: through the keeper's logins under --persist, else our own."""
    if cli.persist > 0:
        from pctfleet.transport import keep

        path = keep.keeper_socket()
        if path is None:
            import sys

            sys.stderr.write(f"warning: {keep.unkept_reason()}\n")
        else:
            _kept_logins(nodes)
            held = {node: _held.get(node) for node in nodes if node in _held}
            return keep.KeepPool(path, held)  # type: ignore[return-value]
    from pctfleet.transport.early import ssh_module  # paramiko and Fabric: loaded to connect

    return ssh_module().NodePool()


def node_connection(node, cli: ConnectOptions):  # noqa: ANN001, ANN201 - NodeConnection or KeptNode
    """One node's connection outside a fleet (audit's node read): the keeper's login
    under --persist when it holds one, else our own."""
    options = node_options(node, cli)
    key = (node.name, node.address, options)
    if options.persist > 0:
        from pctfleet.transport import keep

        path = keep.keeper_socket()
        if path is not None:
            return keep.kept_or_own(path, key, _kept_logins([key]).get(key))
    from pctfleet.transport.early import ssh_module

    return ssh_module().NodeConnection(*key)
