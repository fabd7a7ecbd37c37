"""Ansible YAML inventories written for `community.proxmox.proxmox_pct_remote`:
each host with `proxmox_vmid` is a container on the node `ansible_host`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pctfleet.errors import InventoryError, brief
from pctfleet.inventory.checks import (
    CTID_HELP,
    Src,
    as_int,
    check_address,
    check_ctid,
    check_keys,
    check_name,
    check_vars,
    expand_path,
    mapping,
    valid_port,
    valid_sessions,
)
from pctfleet.inventory.groups import GroupSpec, by_precedence, resolve_groups, with_groups
from pctfleet.inventory.hostrange import expand_hosts
from pctfleet.inventory.model import Container, Group, Inventory, Node
from pctfleet.inventory.varfiles import merged_files
from pctfleet.playbook.yamlsrc import YamlMap

ANSIBLE_GROUP_KEYS = ("hosts", "children", "vars")
PRIORITY = "ansible_group_priority"
# Host vars that describe the connection; they configure the node and are not
# passed on as container vars.
ANSIBLE_CONNECTION_VARS = {
    "ansible_host": "address",
    "ansible_ssh_host": "address",
    "ansible_port": "port",
    "ansible_ssh_port": "port",
    "ansible_user": "user",
    "ansible_ssh_user": "user",
    "ansible_ssh_private_key_file": "identity",
    "proxmox_vmid": "ctid",
    "pctfleet_max_sessions": "max_sessions",
}


@dataclass
class _AnsibleHost:
    name: str
    vars: dict[str, Any]
    where: str


class _AnsibleReader:
    """Collects hosts and groups of an Ansible YAML inventory (merging repeats)."""

    def __init__(self, src: Src) -> None:
        self.src = src
        self.hosts: dict[str, _AnsibleHost] = {}
        self.groups: dict[str, GroupSpec] = {}

    def group(self, parent: YamlMap, key: Any, depth: int = 0) -> str:
        name = check_name(self.src, key, "group", parent, key)
        if depth > 100:
            raise self.src.fail("groups nested too deeply", parent, key)
        ctx = f"group {name!r}"
        body = mapping(self.src, parent, key, ctx)
        check_keys(self.src, body, ANSIBLE_GROUP_KEYS, ctx)
        spec = self.groups.setdefault(name, GroupSpec(where=parent.where(key)))
        spec.vars.update(check_vars(self.src, body, "vars", ctx))
        if PRIORITY in spec.vars:  # not a variable: Ansible orders the group by it
            spec.priority = self._priority(body, spec.vars.pop(PRIORITY), ctx)
        hosts = mapping(self.src, body, "hosts", ctx)
        for host in hosts:
            self._host(hosts, host, spec)
        children = mapping(self.src, body, "children", ctx)
        for child in children:
            child_name = self.group(children, child, depth + 1)
            if child_name not in spec.children:
                spec.children.append(child_name)
        return name

    def _priority(self, body: YamlMap, value: Any, ctx: str) -> int:
        number = as_int(value)
        if number is None:
            where = body["vars"]
            raise self.src.fail(
                f"{PRIORITY} must be an integer, got {brief(value)}", where, PRIORITY, ctx=ctx
            )
        return number

    def _host(self, hosts: YamlMap, key: Any, spec: GroupSpec) -> None:
        pattern = key if isinstance(key, str) and "[" in key else None
        names = expand_hosts(pattern, hosts.where(key)) if pattern else [key]
        host_vars = check_vars(self.src, hosts, key, f"host {key!r}")
        for each in names:
            name = check_name(self.src, each, "host", hosts, key)
            host = self.hosts.setdefault(name, _AnsibleHost(name, {}, hosts.where(key)))
            host.vars.update(host_vars)
            if name not in spec.member_set:
                spec.member_set.add(name)
                spec.members.append(name)


def parse_ansible(doc: YamlMap | list[YamlMap], src: Src) -> Inventory:
    """One Ansible inventory from one document, or from several (a folder's files:
    groups and hosts met again are merged, later variables winning)."""
    reader = _AnsibleReader(src)
    for part in doc if isinstance(doc, list) else [doc]:
        for key in part:
            reader.group(part, key)
    _ungrouped(reader)
    all_spec = reader.groups.pop("all", GroupSpec())
    for spec in reader.groups.values():
        spec.children = [c for c in spec.children if c != "all"]
    host_groups = resolve_groups(reader.groups)
    member_of: dict[str, list[str]] = {}  # host -> its groups in precedence order
    for g in by_precedence(host_groups):
        for member in g.members:
            member_of.setdefault(member, []).append(g.name)
    nodes: dict[str, Node] = {}
    containers, ids, owner = [], [], {}
    for host in reader.hosts.values():
        own = member_of.get(host.name, [])
        effective = _ansible_host_vars(host, all_spec.vars, own, reader.groups, src)
        if "proxmox_vmid" not in effective:
            continue  # not a container (e.g. the Proxmox node itself)
        container = _ansible_container(src, host, effective, nodes)
        # Two hosts on one container would run every task on it twice, at once.
        if (other := owner.setdefault(container.key, host.name)) != host.name:
            raise InventoryError(
                f"host {host.name!r}: container {container.key} is host {other!r} already",
                where=host.where,
            )
        containers.append(container)
        ids.append(host.name)
    if not containers:
        raise InventoryError("no host has 'proxmox_vmid': nothing to manage", where=src.name)
    groups = _ansible_groups(host_groups, dict(zip(ids, (c.key for c in containers), strict=True)))
    inv = Inventory(
        nodes, with_groups(containers, groups), groups, _strip_connection(all_spec.vars), src.name
    )
    inv.var_files = src.var_files
    return inv


def _ungrouped(reader: _AnsibleReader) -> None:
    """Ansible's `ungrouped`: the hosts in no other group (its vars and group_vars file
    apply to them; a host listed there and elsewhere is taken out of it)."""
    grouped = {
        host
        for name, spec in reader.groups.items()
        if name not in ("all", "ungrouped")
        for host in spec.members
    }
    alone = [host for host in reader.hosts if host not in grouped]
    reader.groups.setdefault("ungrouped", GroupSpec()).members = alone  # there even if empty


def _ansible_host_vars(
    host: _AnsibleHost,
    all_vars: Mapping[str, Any],
    member_of: list[str],
    specs: Mapping[str, GroupSpec],
    src: Src,
) -> dict[str, Any]:
    """Ansible's precedence: all < groups by depth then name < group_vars files <
    host < host_vars files (connection variables included: they may be set there)."""
    merged = dict(all_vars)
    for name in member_of:
        merged.update(specs[name].vars)
    from_groups, from_host = merged_files(src.var_files, member_of, host.name, raw=True)
    merged.update(from_groups)
    merged.update(host.vars)
    merged.update(from_host)
    return merged


def _ansible_container(
    src: Src, host: _AnsibleHost, hv: Mapping[str, Any], nodes: dict[str, Node]
) -> Container:
    ctx = f"host {host.name!r}"
    conn = {
        field_: hv[var] for var, field_ in reversed(ANSIBLE_CONNECTION_VARS.items()) if var in hv
    }
    ctid = check_ctid(conn["ctid"])
    if ctid is None:
        raise InventoryError(
            f"{ctx}: proxmox_vmid {brief(conn['ctid'])} is invalid ({CTID_HELP})", where=host.where
        )
    node = _ansible_node(host, conn, ctx)
    known = nodes.setdefault(node.name, node)
    if known != node:
        raise InventoryError(
            f"{ctx}: node {node.name!r} is reached with different "
            "ansible_port/ansible_user/key file by another host",
            where=host.where,
        )
    return Container(known, ctid, host.name, vars=_strip_connection(host.vars), host=host.name)


def _ansible_node(host: _AnsibleHost, conn: Mapping[str, Any], ctx: str) -> Node:
    if "address" not in conn:
        raise InventoryError(
            f"{ctx}: has proxmox_vmid but no ansible_host (the address of its Proxmox node)",
            where=host.where,
        )
    problem = check_address(conn["address"])
    port = valid_port(conn.get("port", 22))
    if problem or port is None:
        detail = (
            f"ansible_host {problem}"
            if problem
            else f"ansible_port must be an integer 1-65535, got {brief(conn.get('port'))}"
        )
        raise InventoryError(f"{ctx}: {detail}", where=host.where)
    user = conn.get("user", "root")
    if check_address(user):
        raise InventoryError(f"{ctx}: ansible_user {check_address(user)}", where=host.where)
    identity = conn.get("identity")
    if identity is not None and (not isinstance(identity, str) or not identity.strip()):
        raise InventoryError(
            f"{ctx}: ansible_ssh_private_key_file must be a path", where=host.where
        )
    sessions = conn.get("max_sessions")
    if sessions is not None and valid_sessions(sessions) is None:
        raise InventoryError(
            f"{ctx}: pctfleet_max_sessions must be an integer >= 1, got {brief(sessions)}",
            where=host.where,
        )
    node = Node(conn["address"], conn["address"], port, user, expand_path(identity))
    return replace(node, max_sessions=valid_sessions(sessions) if sessions is not None else None)


def _strip_connection(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in ANSIBLE_CONNECTION_VARS}


def _ansible_groups(groups: Mapping[str, Group], key_of: Mapping[str, str]) -> dict[str, Group]:
    """Host-name members -> container keys; hosts without a ctid drop out."""
    return {
        name: replace(
            g,
            members=tuple(key_of[m] for m in g.members if m in key_of),
            vars=_strip_connection(g.vars),
        )
        for name, g in groups.items()
    }
