"""Containers as the nodes themselves report them: `pct list`, then `pct config`
for each container, read in one SSH round trip per node.

Discovery only reads: it runs `pct list` and `pct config`, nothing else. The
config text is data: it is parsed into strings and never rendered as a
template or as console markup.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pctfleet.errors import PctfleetError
from pctfleet.inventory.model import Node

MARK = "@@pctfleet-ct"
UNREADABLE = "@@pctfleet-ct-unreadable"
LIST_HEADER = ("VMID", "Status", "Lock", "Name")
STATUSES = ("running", "stopped")
# Keys of `pct config` that pass a device or a mount into the container.
DEVICE_KEY = re.compile(r"dev\d+|lxc\.cgroup2?\.devices\.(allow|deny)")
MOUNT_KEY = re.compile(r"rootfs|mp\d+|lxc\.mount\.entry")
TAG_SPLIT = re.compile(r"[;,\s]+")


class DiscoveryError(PctfleetError):
    """A node whose containers could not be read (never taken for "no containers")."""


@dataclass(frozen=True)
class FoundCT:
    """One container as `pct list` and `pct config` describe it."""

    ctid: int
    status: str
    lock: str = ""
    name: str | None = None
    config: tuple[tuple[str, str], ...] = ()

    def value(self, key: str) -> str | None:
        return next((v for k, v in self.config if k == key), None)

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(t for t in TAG_SPLIT.split(self.value("tags") or "") if t)

    def lines(self, pattern: re.Pattern[str]) -> list[str]:
        return [f"{k}: {v}" for k, v in self.config if pattern.fullmatch(k)]

    def as_json(self) -> dict[str, Any]:
        return {
            "ctid": self.ctid,
            "name": self.name,
            "status": self.status,
            "lock": self.lock or None,
            "tags": list(self.tags),
            "ostype": self.value("ostype"),
            "cores": _number(self.value("cores")),
            "memory": _number(self.value("memory")),
            "devices": self.lines(DEVICE_KEY),
            "mounts": self.lines(MOUNT_KEY),
        }


def _number(value: str | None) -> int | str | None:
    """Counts as integers (`cores: 8`, `memory: 65536` MiB); anything else as written."""
    return int(value) if value is not None and value.isdigit() else value


@dataclass(frozen=True)
class Rule:
    """Which containers of a node an inventory manages: all of `tags`, and `status`."""

    tags: tuple[str, ...] = ()
    status: str | None = None

    def matches(self, ct: FoundCT) -> bool:
        return set(self.tags) <= set(ct.tags) and self.status in (None, ct.status)


@dataclass
class NodeFound:
    """What one node reported: its containers, or why they could not be read."""

    node: Node
    containers: list[FoundCT] = field(default_factory=list)
    error: str | None = None
    gpu: Any = None  # cuda.driver.NodeGpu: the node's NVIDIA driver side


def parse_pct_list(text: str) -> list[tuple[int, str, str, str]]:
    """`pct list` output -> (vmid, status, lock, name) rows. No output means no CTs."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    if tuple(lines[0].split()) != LIST_HEADER:
        raise ValueError(f"unexpected pct list header {lines[0].strip()!r}")
    rows = []
    for line in lines[1:]:
        words = line.split()
        # Lock is an empty column unless the CT is locked; names have no spaces.
        if len(words) not in (3, 4) or not words[0].isdigit():
            raise ValueError(f"unexpected pct list line {line.strip()!r}")
        lock = words[2] if len(words) == 4 else ""
        rows.append((int(words[0]), words[1], lock, words[-1]))
    return rows


def parse_pct_config(text: str) -> tuple[tuple[str, str], ...]:
    """`pct config` output -> (key, value) pairs in order; `lxc.*` keys may repeat."""
    pairs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_.-]*", key):
            raise ValueError(f"unexpected pct config line {line.strip()[:80]!r}")
        pairs.append((key, value.strip()))
    return tuple(pairs)


def discovery_command(sudo: bool = False) -> str:
    """One shell line: the node's NVIDIA driver facts (cuda/driver.py), `pct list`, then a
    marker and `pct config` per container."""
    from pctfleet.cuda.driver import NODE_READ

    pct = "sudo -n pct" if sudo else "pct"
    return (
        f"({NODE_READ}) 2>/dev/null; "
        f"list=$({pct} list) || exit $?; printf '%s\\n' \"$list\"; "
        f"for id in $(printf '%s\\n' \"$list\" | awk 'NR > 1 {{print $1}}'); do "
        f'echo \'{MARK}\' "$id"; {pct} config "$id" 2>&1 || echo \'{UNREADABLE}\' "$id"; done'
    )


def parse_discovery(text: str) -> list[FoundCT]:
    """The output of `discovery_command` -> containers; ValueError names what is wrong."""
    head, *sections = text.split(f"{MARK} ")
    rows = parse_pct_list(head)
    configs: dict[int, tuple[tuple[str, str], ...]] = {}
    for section in sections:
        ctid_text, _, body = section.partition("\n")
        if UNREADABLE in body:
            reason = body.split(UNREADABLE)[0].strip().splitlines() or ["no output"]
            raise ValueError(f"pct config {ctid_text.strip()} failed: {reason[-1]}")
        configs[int(ctid_text)] = parse_pct_config(body)
    found = []
    for ctid, status, lock, listed_name in rows:
        if ctid not in configs:
            raise ValueError(f"no pct config for CT {ctid}")
        ct = FoundCT(ctid, status, lock, listed_name, configs[ctid])
        found.append(FoundCT(ctid, status, lock, ct.value("hostname") or listed_name, ct.config))
    return found


def read_node(node: Node, options: Any) -> NodeFound:  # noqa: ANN401 - ConnectOptions
    """Run the discovery command on `node`; any failure becomes `error`, never []."""
    from pctfleet.transport.base import TransportError
    from pctfleet.transport.connections import node_connection
    from pctfleet.transport.fixes import asks_password, sudoers_fix

    out, err = io.BytesIO(), io.BytesIO()
    conn = node_connection(node, options)
    try:
        code, _ = conn.exec(
            discovery_command(conn.target.user != "root"),
            stdin=None,
            timeout=None,
            stdout=out,
            stderr=err,
        )
    except TransportError as exc:
        return NodeFound(node, error=str(exc).splitlines()[0] if str(exc) else "unreachable")
    finally:
        conn.hand_over()  # the command's next user of the node (audit's run) logs in no more
    from pctfleet.cuda.driver import SECTION, parse_node

    gpu_text, ended, text = out.getvalue().decode("utf-8", "replace").partition(f"{SECTION} end\n")
    gpu_text, text = (gpu_text, text) if ended else ("", gpu_text)
    found = NodeFound(node, gpu=parse_node(gpu_text))
    if code != 0:
        # The last line: a node whose root's ~/.bashrc talks puts that ahead of pct's.
        said = err.getvalue().decode("utf-8", "replace").strip().splitlines() or ["no output"]
        if asks_password("\n".join(said)):
            fix = sudoers_fix(conn.target.user, node.name)
            found.error = f"sudo asks {conn.target.user} for a password ({fix})"
            return found
        found.error = f"pct list failed (exit {code}): {said[-1]}"
        return found
    try:
        found.containers = parse_discovery(text)
    except ValueError as exc:
        found.error = str(exc)
    return found


NODES_AT_ONCE = 64  # without --forks: one SSH login each, bounded threads on a large fleet


def read_nodes(
    nodes: Iterable[Node],
    options: Any,  # noqa: ANN401
    forks: int | None = None,
) -> list[NodeFound]:
    """`read_node` on every node, `forks` (else NODES_AT_ONCE) at once; in the order given."""
    nodes = list(nodes)
    if not nodes:
        return []
    at_once = min(forks or NODES_AT_ONCE, len(nodes))
    with ThreadPoolExecutor(max_workers=max(1, at_once)) as pool:
        return list(pool.map(lambda n: read_node(n, options), nodes))


def failures(found: Sequence[NodeFound]) -> list[str]:
    """One line per node that could not be read."""
    return [f"node {f.node.name} ({f.node.address}): {f.error}" for f in found if f.error]


def select(found: Iterable[FoundCT], rule: Rule) -> list[FoundCT]:
    return [ct for ct in found if rule.matches(ct)]


def rule_from(tags: Sequence[str] | None, status: str | None) -> Rule:
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    return Rule(tuple(tags or ()), status)


def as_rows(found: Sequence[NodeFound], rule: Rule) -> list[dict[str, Any]]:
    return [
        {"node": f.node.name, **ct.as_json()} for f in found for ct in select(f.containers, rule)
    ]


@dataclass(frozen=True)
class FleetItem:
    """Drift of the fleet itself: a container on a node the inventory does not
    manage ("unmanaged"), one it lists that the node lacks ("missing"), or a node
    whose containers could not be read ("unreadable")."""

    node: str
    kind: str
    ctid: int | None = None
    name: str | None = None
    status: str | None = None
    detail: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "ctid": self.ctid,
            "kind": self.kind,
            "name": self.name,
            "status": self.status,
            "detail": self.detail or None,
        }


def fleet_drift(
    managed: Iterable[Any], selected: Iterable[Any], found: Sequence[NodeFound], rules: Any
) -> list[FleetItem]:
    """Compare what the nodes hold with the inventory's `managed` containers.

    Nodes with listed containers: every other container on them is unmanaged.
    Nodes in `rules` (`discover:`) manage exactly the containers their rule
    matches, so the rest is left out by choice and never reported. `selected`
    containers absent from their node are missing."""
    items: list[FleetItem] = []
    managed, selected = list(managed), list(selected)
    for f in found:
        node = f.node.name
        if f.error:
            items.append(FleetItem(node, "unreadable", detail=f.error))
            continue
        here = {c.ctid for c in managed if c.node.name == node}
        present = {ct.ctid for ct in f.containers}
        if node not in rules:
            items += [
                FleetItem(node, "unmanaged", ct.ctid, ct.name, ct.status)
                for ct in f.containers
                if ct.ctid not in here
            ]
        items += [
            FleetItem(node, "missing", c.ctid, c.name)
            for c in selected
            if c.node.name == node and c.ctid not in present
        ]
    return items
