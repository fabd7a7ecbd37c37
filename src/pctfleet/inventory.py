"""Inventory: which Proxmox nodes exist, which containers live on them, and their vars.

Two file formats are read (docs/inventory.md describes both):

* the native one, with `defaults`, `vars`, `nodes` and `groups` at the top;
* an Ansible YAML inventory written for `community.proxmox.proxmox_pct_remote`,
  where each host with `proxmox_vmid` is a container on the node `ansible_host`.

Both produce the same `Inventory`. Every mistake in the file is an
`InventoryError` whose one-line message starts with `file:line`.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pctfleet.errors import InventoryError, brief, did_you_mean
from pctfleet.yamlsrc import YamlList, YamlMap, load_yaml, load_yaml_text, plain

CTID_MIN = 100
CTID_MAX = 999_999_999
CTID_HELP = f"integers {CTID_MIN}-{CTID_MAX}"
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")
VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
RESERVED_GROUPS = ("all",)
MAX_CTID_RANGE = 10_000
_DIGITS_RE = re.compile(r"\s*[0-9]{1,12}\s*\Z")

NATIVE_KEYS = ("defaults", "vars", "nodes", "groups")
CONNECTION_KEYS = ("user", "port", "identity", "known_hosts", "ssh_options")
# ssh_config options `ssh_options` may set, as ssh spells them; they act like `ssh -o`.
SSH_OPTIONS = {k.lower(): k for k in (
    "ProxyJump", "ProxyCommand", "ServerAliveInterval", "StrictHostKeyChecking")}
# ssh_config options the inventory has a key of its own for.
OWN_KEY_OF = {"user": "user", "port": "port", "identityfile": "identity",
              "userknownhostsfile": "known_hosts", "hostname": "address"}
NODE_KEYS = ("address", *CONNECTION_KEYS, "vars", "containers")
CONTAINER_KEYS = ("name", "vars")
GROUP_KEYS = ("containers", "nodes", "children", "vars")
ANSIBLE_GROUP_KEYS = ("hosts", "children", "vars")
# Host vars that describe the connection; they configure the node and are not
# passed on as container vars.
ANSIBLE_CONNECTION_VARS = {
    "ansible_host": "address", "ansible_ssh_host": "address",
    "ansible_port": "port", "ansible_ssh_port": "port",
    "ansible_user": "user", "ansible_ssh_user": "user",
    "ansible_ssh_private_key_file": "identity",
    "proxmox_vmid": "ctid",
}


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


@dataclass(frozen=True)
class Container:
    """An LXC container `ctid` on `node`; `groups` in variable precedence order."""

    node: Node
    ctid: int
    name: str | None = None
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        """`node/ctid`, unique in the inventory, e.g. `pve1/200`."""
        return f"{self.node.name}/{self.ctid}"

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


class Inventory:
    """Nodes, containers (file order), groups and the `all` vars of one inventory."""

    def __init__(self, nodes: Mapping[str, Node], containers: Sequence[Container],
                 groups: Mapping[str, Group] | None = None,
                 vars: Mapping[str, Any] | None = None, source: str = "<inventory>") -> None:
        self.nodes: dict[str, Node] = dict(nodes)
        self.containers: list[Container] = list(containers)
        self.groups: dict[str, Group] = dict(groups or {})
        self.vars: dict[str, Any] = dict(vars or {})
        self.source = source
        self._by_key = {c.key: c for c in self.containers}

    def __repr__(self) -> str:
        return (f"Inventory({self.source!r}, {len(self.nodes)} nodes, "
                f"{len(self.containers)} containers, {len(self.groups)} groups)")

    def get(self, key: str) -> Container | None:
        """The container with key `node/ctid`, or None."""
        return self._by_key.get(key)

    def select(self, limit: str | None) -> list[Container]:
        """Containers matching an Ansible-like pattern, in inventory order.

        `gpu,pve2,!pve2/201` or `gpu:&pve1`. Terms: `all`/`*`, a group, a node,
        `node/ctid`, a container name, a bare ctid, or a glob of any of these.
        `!term` removes, `&term` intersects. An unknown term is an error.
        """
        if limit is None or not limit.strip():
            return list(self.containers)
        union: set[str] = set()
        plain, inter, excl = _split_terms(limit, self.nodes)
        for term in plain or ["all"]:
            union |= self._match(term)
        for term in inter:
            union &= self._match(term)
        for term in excl:
            union -= self._match(term)
        return [c for c in self.containers if c.key in union]

    def _match(self, term: str) -> set[str]:
        if term in ("all", "*"):
            return set(self._by_key)
        found = self._match_exact(term) if not _is_glob(term) else self._match_glob(term)
        if found is None:
            raise InventoryError(
                f"pattern {term!r} matches no group, node or container in {self.source}"
                + did_you_mean(term, self._names()))
        return found

    def _match_exact(self, term: str) -> set[str] | None:
        hits: list[Iterable[str]] = []
        if term in self.groups:
            hits.append(self.groups[term].members)
        if term in self.nodes:
            hits.append(c.key for c in self.containers if c.node.name == term)
        hits.append(c.key for c in self.containers
                    if term in (c.key, c.name) or c.ctid == as_int(term))
        found = set().union(*hits)
        known = term in self.groups or term in self.nodes
        return found if found or known else None

    def _match_glob(self, term: str) -> set[str] | None:
        groups = fnmatch.filter(self.groups, term)
        nodes = set(fnmatch.filter(self.nodes, term))
        found = {k for g in groups for k in self.groups[g].members}
        for c in self.containers:
            if (c.node.name in nodes or fnmatch.fnmatchcase(c.key, term)
                    or (c.name and fnmatch.fnmatchcase(c.name, term))):
                found.add(c.key)
        return found if found or groups or nodes else None

    def _names(self) -> list[str]:
        names = [*self.groups, *self.nodes]
        return names + [n for c in self.containers for n in (c.key, c.name) if n]

    def vars_for(self, container: Container,
                 extra_vars: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Variables of one container, later sources winning per top-level key:
        all < groups (parents first, siblings by name) < node < container < extra.
        Built-ins (`inventory_hostname`, `node_name`, ...) are set last."""
        merged: dict[str, Any] = dict(self.vars)
        for name in container.groups:
            merged.update(self.groups[name].vars)
        merged.update(container.node.vars)
        merged.update(container.vars)
        merged.update(extra_vars or {})
        merged.update(builtin_vars(container))
        return merged


def builtin_vars(container: Container) -> dict[str, Any]:
    """Variables every container gets from its place in the inventory."""
    return {
        "inventory_hostname": container.key,
        "node_name": container.node.name,
        "node_address": container.node.address,
        "ctid": container.ctid,
        "ct_name": container.name,
        "group_names": sorted(container.groups),
    }


def _is_glob(term: str) -> bool:
    return any(ch in term for ch in "*?[")


def _split_terms(limit: str, nodes: Mapping[str, Node]) -> tuple[list, list, list]:
    """Split `a,b,&c,!d` (or `a:b:&c:!d`) into plain, `&` and `!` terms."""
    # A node named by an IPv6 address holds colons: no colon split for it.
    sep = "," if "," in limit or limit.strip() in nodes else ":"
    raw = limit.split(sep)
    plain, inter, excl = [], [], []
    for term in (t.strip() for t in raw):
        if term.startswith("!") and term[1:]:
            excl.append(term[1:])
        elif term.startswith("&") and term[1:]:
            inter.append(term[1:])
        elif term and term not in ("!", "&"):
            plain.append(term)
    return plain, inter, excl


# ---------------------------------------------------------------- validation


class _Src:
    """The file being read, to build `file:line` for values without positions."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, message: str, obj: Any = None, key: Any = None, *,
             ctx: str = "") -> InventoryError:
        where = obj.where(key) if isinstance(obj, YamlMap | YamlList) else self.name
        return InventoryError(f"{ctx}: {message}" if ctx else message, where=where)


def _check_keys(src: _Src, m: YamlMap, allowed: Sequence[str], ctx: str) -> None:
    for key in m:
        if key not in allowed:
            raise src.fail(f"unknown key {brief(key)}{did_you_mean(key, allowed)}; "
                           f"expected one of: {', '.join(allowed)}", m, key, ctx=ctx)


def _empty(src: _Src, line: int) -> YamlMap:
    """An empty mapping standing for a `null` entry, at that entry's line."""
    empty = YamlMap()
    empty.file, empty.line = src.name, line
    return empty


def _mapping(src: _Src, parent: YamlMap, key: Any, ctx: str) -> YamlMap:
    """`parent[key]` as a mapping; a missing key or `null` gives an empty one."""
    value = parent.get(key)
    if value is None:
        return _empty(src, parent.line_of(key))
    if not isinstance(value, YamlMap):
        raise src.fail(f"{brief(key)} must be a mapping, got {brief(value)}",
                       parent, key, ctx=ctx)
    return value


def _check_name(src: _Src, value: Any, kind: str, m: YamlMap, key: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise src.fail(f"{kind} name {brief(value)} is invalid (letters, digits, "
                       "'_', '.', '-')", m, key)
    return value


def as_int(value: Any) -> int | None:
    """An int, or a string of ASCII digits, as int; None for anything else."""
    if isinstance(value, str) and _DIGITS_RE.match(value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _valid_port(value: Any) -> int | None:
    port = as_int(value)
    return port if port is not None and 1 <= port <= 65535 else None


def _check_port(src: _Src, m: YamlMap, key: str, ctx: str) -> int:
    value = _valid_port(m[key])
    if value is None:
        raise src.fail(f"{key!r} must be an integer 1-65535, got {brief(m[key])}",
                       m, key, ctx=ctx)
    return value


def check_address(value: Any) -> str | None:
    """Why `value` is not a usable host address, or None if it is."""
    if not isinstance(value, str) or not value:
        return f"must be a non-empty string, got {brief(value)}"
    if any(ch.isspace() for ch in value) or value.startswith("-"):
        # A leading '-' would be read as an option by ssh; spaces are never valid.
        return f"must not contain whitespace or start with '-', got {brief(value)}"
    return None


def _check_word(src: _Src, m: YamlMap, key: str, ctx: str, value: Any = None) -> str:
    """`m[key]` (or `value`) as an address or user name that is safe to hand to ssh."""
    value = m[key] if value is None else value
    problem = check_address(value)
    if problem:
        raise src.fail(f"{key!r} {problem}", m, key, ctx=ctx)
    return value


def _check_text(src: _Src, m: YamlMap, key: str, ctx: str) -> str:
    value = m[key]
    if not isinstance(value, str) or not value.strip():
        raise src.fail(f"{key!r} must be a non-empty string, got {brief(value)}",
                       m, key, ctx=ctx)
    return value


def check_ctid(value: Any) -> int | None:
    """`value` as a container id, or None when it is not one."""
    value = as_int(value)
    return value if value is not None and CTID_MIN <= value <= CTID_MAX else None


def _check_vars(src: _Src, parent: YamlMap, key: Any, ctx: str) -> dict[str, Any]:
    m = _mapping(src, parent, key, ctx)
    for name in m:
        if not isinstance(name, str) or not VAR_NAME_RE.match(name):
            raise src.fail(f"variable name {brief(name)} is invalid (letters, digits "
                           "and '_', not starting with a digit)", m, name, ctx=ctx)
    return plain(m)


def _check_connection(src: _Src, m: YamlMap, ctx: str) -> dict[str, Any]:
    """The connection settings present in `m` (defaults or a node), validated."""
    out: dict[str, Any] = {}
    if "port" in m:
        out["port"] = _check_port(src, m, "port", ctx)
    if "user" in m:
        out["user"] = _check_word(src, m, "user", ctx)
    for key in ("identity", "known_hosts"):
        if key in m and m[key] is not None:
            out[key] = os.path.expanduser(_check_text(src, m, key, ctx))
    if "ssh_options" in m:
        out["ssh_options"] = _check_ssh_options(src, m, ctx)
    return out


def _check_ssh_options(src: _Src, parent: YamlMap, ctx: str) -> dict[str, Any]:
    m = _mapping(src, parent, "ssh_options", ctx)
    for key, value in m.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
            raise src.fail(f"ssh_options entry {brief(key)} must map a name to a "
                           f"scalar, got {brief(value)}", m, key, ctx=ctx)
        name = key.lower()
        if name not in SSH_OPTIONS:
            own = OWN_KEY_OF.get(name)
            known = ", ".join(SSH_OPTIONS.values())
            hint = f"use the {own!r} key" if own else f"supported: {known}"
            raise src.fail(f"ssh_options: {key!r} is not supported ({hint})", m, key, ctx=ctx)
        said = ("yes" if value else "no") if isinstance(value, bool) else str(value)
        if name == "stricthostkeychecking" and said.lower() not in ("yes", "accept-new"):
            raise src.fail(f"ssh_options: StrictHostKeyChecking {said}: only yes or "
                           "accept-new (a changed host key is always refused)", m, key, ctx=ctx)
    return dict(m)


# ---------------------------------------------------------------- groups


@dataclass
class _GroupSpec:
    """A group as written: direct member ids, children, vars, where it is."""

    members: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    where: str = ""


def _resolve_groups(specs: Mapping[str, _GroupSpec]) -> dict[str, Group]:
    """Close groups over their children and compute each group's depth."""
    _check_cycles(specs)
    parents: dict[str, list[str]] = {name: [] for name in specs}
    for name, spec in specs.items():
        for child in spec.children:
            parents[child].append(name)
    depth: dict[str, int] = {}
    members: dict[str, list[str]] = {}
    for name in specs:
        _depth_of(name, parents, depth)
        _members_of(name, specs, members)
    return {name: Group(name, tuple(members[name]), tuple(spec.children),
                        tuple(sorted(parents[name])), depth[name], spec.vars)
            for name, spec in specs.items()}


def _depth_of(name: str, parents: Mapping[str, list[str]], memo: dict[str, int]) -> int:
    """Longest path from the top: a child always sorts after its parents."""
    if name not in memo:
        memo[name] = 1 + max((_depth_of(p, parents, memo) for p in parents[name]), default=0)
    return memo[name]


def _members_of(name: str, specs: Mapping[str, _GroupSpec],
                memo: dict[str, list[str]]) -> list[str]:
    if name not in memo:
        out = dict.fromkeys(specs[name].members)
        for child in specs[name].children:
            out.update(dict.fromkeys(_members_of(child, specs, memo)))
        memo[name] = list(out)
    return memo[name]


def _check_cycles(specs: Mapping[str, _GroupSpec]) -> None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 1:
            cycle = " -> ".join(path[path.index(name):] + [name])
            raise InventoryError(f"group cycle in 'children': {cycle}",
                                 where=specs[path[path.index(name)]].where)
        if state.get(name) == 2:
            return
        state[name] = 1
        for child in specs[name].children:
            visit(child, [*path, name])
        state[name] = 2

    for name in specs:
        visit(name, [])


def _with_groups(containers: Sequence[Container],
                 groups: Mapping[str, Group]) -> list[Container]:
    """Give each container its groups, in precedence order (depth, then name)."""
    ordered = sorted(groups.values(), key=lambda g: (g.depth, g.name))
    return [replace(ct, groups=tuple(g.name for g in ordered if ct.key in g.members))
            for ct in containers]


# ---------------------------------------------------------------- native format


def _parse_native(doc: YamlMap, src: _Src) -> Inventory:
    _check_keys(src, doc, NATIVE_KEYS, "inventory")
    defaults_map = _mapping(src, doc, "defaults", "defaults")
    _check_keys(src, defaults_map, CONNECTION_KEYS, "defaults")
    defaults = _check_connection(src, defaults_map, "defaults")
    all_vars = _check_vars(src, doc, "vars", "vars")
    nodes_map = _mapping(src, doc, "nodes", "nodes")
    if not nodes_map:
        raise src.fail("the inventory defines no nodes (add a 'nodes' mapping)", doc, "nodes")
    nodes: dict[str, Node] = {}
    containers: list[Container] = []
    ct_names: dict[str, str] = {}
    for key in nodes_map:
        node, body = _parse_node(src, nodes_map, key, defaults)
        if node.name in nodes:
            raise src.fail(f"node {node.name!r} is defined twice", nodes_map, key)
        nodes[node.name] = node
        containers += _parse_containers(src, node, body, ct_names)
    specs = _parse_groups(src, doc, nodes, containers)
    groups = _resolve_groups(specs)
    return Inventory(nodes, _with_groups(containers, groups), groups, all_vars, src.name)


def _parse_node(src: _Src, nodes_map: YamlMap, key: Any,
                defaults: Mapping[str, Any]) -> tuple[Node, YamlMap]:
    name = _check_name(src, key, "node", nodes_map, key)
    ctx = f"node {name!r}"
    body = _mapping(src, nodes_map, key, ctx)
    _check_keys(src, body, NODE_KEYS, ctx)
    conn = {**defaults, **_check_connection(src, body, ctx)}
    conn["ssh_options"] = {**defaults.get("ssh_options", {}), **conn.get("ssh_options", {})}
    address = _check_word(src, body, "address", ctx, body.get("address", name))
    node = Node(name=name, address=address, vars=_check_vars(src, body, "vars", ctx), **conn)
    return node, body


def _parse_containers(src: _Src, node: Node, body: YamlMap,
                      ct_names: dict[str, str]) -> list[Container]:
    raw = body.get("containers")
    table: YamlMap | YamlList = raw if isinstance(raw, YamlList) else \
        _mapping(src, body, "containers", f"node {node.name!r}")
    out: dict[int, Container] = {}
    # A bare list of ctids is accepted as shorthand for entries without settings.
    pairs = enumerate(table) if isinstance(table, YamlList) else zip(table, table, strict=True)
    for key, raw_ctid in pairs:
        entry = table[key] if isinstance(table, YamlMap) else None
        ct = _parse_container(src, node, table, key, raw_ctid, entry, ct_names)
        if ct.ctid in out:
            raise src.fail(f"container {ct.key} is listed twice", table, key)
        out[ct.ctid] = ct
    return list(out.values())


def _parse_container(src: _Src, node: Node, parent: YamlMap | YamlList, key: Any,
                     raw_ctid: Any, entry: Any, ct_names: dict[str, str]) -> Container:
    ctx = f"node {node.name!r}"
    ctid = check_ctid(raw_ctid)
    if ctid is None:
        raise src.fail(f"container id {brief(raw_ctid)} is invalid ({CTID_HELP})",
                       parent, key, ctx=ctx)
    ctx = f"container {node.name}/{ctid}"
    if entry is not None and not isinstance(entry, YamlMap):
        raise src.fail(f"must be a mapping (name, vars) or empty, got {brief(entry)}",
                       parent, key, ctx=ctx)
    entry = entry if entry is not None else _empty(src, parent.line_of(key))
    _check_keys(src, entry, CONTAINER_KEYS, ctx)
    name = entry.get("name")
    if name is not None:
        name = _check_name(src, name, "container", entry, "name")
        if name in ct_names:
            raise src.fail(f"container name {name!r} is already used by {ct_names[name]}",
                           entry, "name", ctx=ctx)
        ct_names[name] = f"{node.name}/{ctid}"
    return Container(node, ctid, name, vars=_check_vars(src, entry, "vars", ctx))


def _parse_groups(src: _Src, doc: YamlMap, nodes: Mapping[str, Node],
                  containers: Sequence[Container]) -> dict[str, _GroupSpec]:
    table = _mapping(src, doc, "groups", "groups")
    names = {}
    for key in table:
        name = _check_name(src, key, "group", table, key)
        if name in RESERVED_GROUPS:
            raise src.fail(f"group name {name!r} is reserved (it means every container)",
                           table, key)
        names[name] = key
    by_ref = {c.key: c.key for c in containers} | {c.name: c.key for c in containers if c.name}
    return {name: _parse_group(src, table, key, name, names, nodes, containers, by_ref)
            for name, key in names.items()}


def _parse_group(src: _Src, table: YamlMap, key: Any, name: str, groups: Mapping[str, Any],
                 nodes: Mapping[str, Node], containers: Sequence[Container],
                 by_ref: Mapping[str, str]) -> _GroupSpec:
    ctx = f"group {name!r}"
    body = _mapping(src, table, key, ctx)
    _check_keys(src, body, GROUP_KEYS, ctx)
    spec = _GroupSpec(vars=_check_vars(src, body, "vars", ctx), where=table.where(key))
    for ref in _name_list(src, body, "containers", ctx, by_ref, "container"):
        spec.members.append(by_ref[ref])
    for ref in _name_list(src, body, "nodes", ctx, nodes, "node"):
        spec.members += [c.key for c in containers if c.node.name == ref]
    spec.children = _name_list(src, body, "children", ctx, groups, "group")
    return spec


def _name_list(src: _Src, body: YamlMap, key: str, ctx: str,
               known: Mapping[str, Any], kind: str) -> list[str]:
    """`body[key]` as a list of references that must all be in `known`."""
    raw = body.get(key)
    if raw is None:
        return []
    if not isinstance(raw, YamlList):
        raise src.fail(f"{key!r} must be a list, got {brief(raw)}", body, key, ctx=ctx)
    out = []
    for i, item in enumerate(raw):
        ref = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
        if not isinstance(ref, str) or ref not in known:
            raise src.fail(f"unknown {kind} {brief(item)} in {key!r}"
                           + did_you_mean(ref, known), raw, i, ctx=ctx)
        out.append(ref)
    return out


# ---------------------------------------------------------------- Ansible format


@dataclass
class _AnsibleHost:
    name: str
    vars: dict[str, Any]
    where: str


class _AnsibleReader:
    """Collects hosts and groups of an Ansible YAML inventory (merging repeats)."""

    def __init__(self, src: _Src) -> None:
        self.src = src
        self.hosts: dict[str, _AnsibleHost] = {}
        self.groups: dict[str, _GroupSpec] = {}

    def group(self, parent: YamlMap, key: Any, depth: int = 0) -> str:
        name = _check_name(self.src, key, "group", parent, key)
        if depth > 100:
            raise self.src.fail("groups nested too deeply", parent, key)
        ctx = f"group {name!r}"
        body = _mapping(self.src, parent, key, ctx)
        _check_keys(self.src, body, ANSIBLE_GROUP_KEYS, ctx)
        spec = self.groups.setdefault(name, _GroupSpec(where=parent.where(key)))
        spec.vars.update(_check_vars(self.src, body, "vars", ctx))
        hosts = _mapping(self.src, body, "hosts", ctx)
        for host in hosts:
            self._host(hosts, host, spec)
        children = _mapping(self.src, body, "children", ctx)
        for child in children:
            child_name = self.group(children, child, depth + 1)
            if child_name not in spec.children:
                spec.children.append(child_name)
        return name

    def _host(self, hosts: YamlMap, key: Any, spec: _GroupSpec) -> None:
        name = _check_name(self.src, key, "host", hosts, key)
        host_vars = _check_vars(self.src, hosts, key, f"host {name!r}")
        host = self.hosts.setdefault(name, _AnsibleHost(name, {}, hosts.where(key)))
        host.vars.update(host_vars)
        if name not in spec.members:
            spec.members.append(name)


def _looks_like_ansible(doc: YamlMap) -> bool:
    if not doc or any(key in NATIVE_KEYS for key in doc):
        return False
    if "all" in doc:
        return True  # never a native key; report Ansible-style mistakes then
    return all(v is None or (isinstance(v, YamlMap) and all(k in ANSIBLE_GROUP_KEYS for k in v))
               for v in doc.values())


def _parse_ansible(doc: YamlMap, src: _Src) -> Inventory:
    reader = _AnsibleReader(src)
    for key in doc:
        reader.group(doc, key)
    all_spec = reader.groups.pop("all", _GroupSpec())
    for spec in reader.groups.values():
        spec.children = [c for c in spec.children if c != "all"]
    host_groups = _resolve_groups(reader.groups)
    nodes: dict[str, Node] = {}
    containers, ids = [], []
    for host in reader.hosts.values():
        effective = _ansible_host_vars(host, all_spec.vars, host_groups, reader.groups)
        if "proxmox_vmid" not in effective:
            continue  # not a container (e.g. the Proxmox node itself)
        containers.append(_ansible_container(src, host, effective, nodes))
        ids.append(host.name)
    if not containers:
        raise InventoryError("no host has 'proxmox_vmid': nothing to manage", where=src.name)
    groups = _ansible_groups(host_groups, dict(zip(ids, (c.key for c in containers),
                                                   strict=True)))
    return Inventory(nodes, _with_groups(containers, groups), groups,
                     _strip_connection(all_spec.vars), src.name)


def _ansible_host_vars(host: _AnsibleHost, all_vars: Mapping[str, Any],
                       groups: Mapping[str, Group],
                       specs: Mapping[str, _GroupSpec]) -> dict[str, Any]:
    """Ansible's precedence: all < groups by depth then name < host."""
    merged = dict(all_vars)
    for g in sorted(groups.values(), key=lambda g: (g.depth, g.name)):
        if host.name in g.members:
            merged.update(specs[g.name].vars)
    merged.update(host.vars)
    return merged


def _ansible_container(src: _Src, host: _AnsibleHost, hv: Mapping[str, Any],
                       nodes: dict[str, Node]) -> Container:
    ctx = f"host {host.name!r}"
    conn = {field_: hv[var] for var, field_ in reversed(ANSIBLE_CONNECTION_VARS.items())
            if var in hv}
    ctid = check_ctid(conn["ctid"])
    if ctid is None:
        raise InventoryError(f"{ctx}: proxmox_vmid {brief(conn['ctid'])} is invalid "
                             f"({CTID_HELP})", where=host.where)
    node = _ansible_node(host, conn, ctx)
    known = nodes.setdefault(node.name, node)
    if known != node:
        raise InventoryError(f"{ctx}: node {node.name!r} is reached with different "
                             "ansible_port/ansible_user/key file by another host",
                             where=host.where)
    return Container(known, ctid, host.name, vars=_strip_connection(host.vars))


def _ansible_node(host: _AnsibleHost, conn: Mapping[str, Any], ctx: str) -> Node:
    if "address" not in conn:
        raise InventoryError(f"{ctx}: has proxmox_vmid but no ansible_host (the address "
                             "of its Proxmox node)", where=host.where)
    problem = check_address(conn["address"])
    port = _valid_port(conn.get("port", 22))
    if problem or port is None:
        detail = f"ansible_host {problem}" if problem else \
            f"ansible_port must be an integer 1-65535, got {brief(conn.get('port'))}"
        raise InventoryError(f"{ctx}: {detail}", where=host.where)
    user = conn.get("user", "root")
    if check_address(user):
        raise InventoryError(f"{ctx}: ansible_user {check_address(user)}", where=host.where)
    identity = conn.get("identity")
    if identity is not None and (not isinstance(identity, str) or not identity.strip()):
        raise InventoryError(f"{ctx}: ansible_ssh_private_key_file must be a path",
                             where=host.where)
    identity = os.path.expanduser(identity) if identity else None
    return Node(conn["address"], conn["address"], port, user, identity)


def _strip_connection(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in ANSIBLE_CONNECTION_VARS}


def _ansible_groups(groups: Mapping[str, Group], key_of: Mapping[str, str]) -> dict[str, Group]:
    """Host-name members -> container keys; hosts without a ctid drop out."""
    return {name: replace(g, members=tuple(key_of[m] for m in g.members if m in key_of),
                          vars=_strip_connection(g.vars))
            for name, g in groups.items()}


# ---------------------------------------------------------------- entry points


def load_inventory(path: str | Path) -> Inventory:
    """Read a native or an Ansible YAML inventory (detected from its top keys)."""
    doc = load_yaml(path, what="an inventory mapping")
    return inventory_from_data(doc, str(path))


def inventory_from_text(text: str, name: str = "<inventory>") -> Inventory:
    """Same as `load_inventory` for YAML text held in memory."""
    doc = load_yaml_text(text, name)
    if doc is None:
        raise InventoryError("inventory is empty", where=name)
    return inventory_from_data(doc, name)


def inventory_from_data(doc: Any, name: str) -> Inventory:
    src = _Src(name)
    if not isinstance(doc, YamlMap):
        raise src.fail(f"an inventory must be a mapping (nodes: ...), got {brief(doc)}", doc)
    try:
        if _looks_like_ansible(doc):
            return _parse_ansible(doc, src)
        return _parse_native(doc, src)
    except RecursionError:
        raise InventoryError("inventory is nested too deeply", where=name) from None


def adhoc_inventory(host: str, ctids: Sequence[int], *, port: int = 22, user: str = "root",
                    identity: str | None = None,
                    known_hosts: str | None = None) -> Inventory:
    """An inventory of one node (`--host`) and some containers on it (`--ct`)."""
    problem = check_address(host) or check_address(user)
    if problem:
        raise InventoryError(f"--host/--user: {problem}")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InventoryError(f"--port: must be an integer 1-65535, got {brief(port)}")
    node = Node(host, host, port, user,
                os.path.expanduser(identity) if identity else None,
                os.path.expanduser(known_hosts) if known_hosts else None)
    containers: dict[int, Container] = {}
    for ctid in ctids:
        if check_ctid(ctid) is None:
            raise InventoryError(f"--ct: {brief(ctid)} is not a container id ({CTID_HELP})")
        containers.setdefault(ctid, Container(node, ctid))
    return Inventory({host: node}, list(containers.values()), source=f"--host {host}")


def parse_ctids(text: str) -> list[int]:
    """`"200,201,205-207"` -> `[200, 201, 205, 206, 207]` (duplicates dropped)."""
    out: dict[int, None] = {}
    for part in (p.strip() for p in str(text).split(",")):
        low, sep, high = part.partition("-")
        first, last = check_ctid(low), check_ctid(high) if sep else check_ctid(low)
        if first is None or last is None or last < first:
            raise InventoryError(f"--ct: {part!r} is not a container id ({CTID_HELP})"
                                 + (" or a range low-high" if sep else ""))
        if last - first >= MAX_CTID_RANGE:
            raise InventoryError(f"--ct: range {part!r} holds more than "
                                 f"{MAX_CTID_RANGE} ids")
        out.update(dict.fromkeys(range(first, last + 1)))
    return list(out)


def parse_extra_vars(items: Sequence[str] | None) -> dict[str, Any]:
    """Merge `-e` values, later ones winning: `k=v k2='a b'`, `@vars.yml`,
    or an inline JSON/YAML mapping `{"a": 1}`. `k=v` values stay strings."""
    merged: dict[str, Any] = {}
    for item in items or ():
        text = item.strip()
        if text.startswith("@"):
            merged.update(_extra_vars_file(text[1:]))
        elif text.startswith(("{", "[")):
            merged.update(_extra_vars_inline(text))
        elif text:
            merged.update(_extra_vars_pairs(text))
    return merged


def _extra_vars_file(path: str) -> dict[str, Any]:
    if not path:
        raise InventoryError("-e: '@' must be followed by a file name")
    data = load_yaml(path, what="a mapping of variables")
    return _extra_vars_mapping(data, f"-e @{path}")


def _extra_vars_inline(text: str) -> dict[str, Any]:
    data = load_yaml_text(text, "-e")
    return _extra_vars_mapping(data, "-e")


def _extra_vars_mapping(data: Any, ctx: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InventoryError(f"{ctx}: expected a mapping of variables, got {brief(data)}")
    for name in data:
        if not isinstance(name, str) or not VAR_NAME_RE.match(name):
            raise InventoryError(f"{ctx}: variable name {brief(name)} is invalid")
    try:
        return plain(data)
    except RecursionError:
        raise InventoryError(f"{ctx}: variables nested too deeply") from None


def _extra_vars_pairs(text: str) -> dict[str, Any]:
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise InventoryError(f"-e: cannot parse {brief(text)}: {err}") from None
    out = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not VAR_NAME_RE.match(name):
            raise InventoryError(f"-e: expected name=value, @file or a mapping, "
                                 f"got {brief(word)}")
        out[name] = value
    return out
