"""Ansible YAML inventories written for `community.proxmox.proxmox_pct_remote`:
each host with `proxmox_vmid` is a container on the node `ansible_host`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pctfleet.ansiblecfg import NodeLogin
from pctfleet.errors import InputError, InventoryError, brief
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
# passed on as container vars. Where several name one setting, the one listed last
# wins, as in proxmox_pct_remote's option lists (measured: ansible_ssh_host over
# ansible_host, ansible_paramiko_user over both user names).
ANSIBLE_CONNECTION_VARS = {
    "ansible_host": "address",
    "ansible_ssh_host": "address",
    "ansible_paramiko_host": "address",
    "ansible_port": "port",
    "ansible_ssh_port": "port",
    "ansible_paramiko_port": "port",
    "ansible_user": "user",
    "ansible_ssh_user": "user",
    "ansible_paramiko_user": "user",
    "ansible_private_key_file": "identity",
    "ansible_ssh_private_key_file": "identity",
    "ansible_paramiko_private_key_file": "identity",
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


def parse_ansible(
    doc: YamlMap | list[YamlMap], src: Src, login: NodeLogin | None = None
) -> Inventory:
    """One Ansible inventory from one document, or from several (a folder's files:
    groups and hosts met again are merged, later variables winning). `login`: the node
    login of ansible.cfg and ANSIBLE_*, for what host variables leave out."""
    login = login or NodeLogin()
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
        container = _ansible_container(src, host, effective, nodes, login)
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
    src: Src, host: _AnsibleHost, hv: Mapping[str, Any], nodes: dict[str, Node], login: NodeLogin
) -> Container:
    ctx = f"host {host.name!r}"
    named = {field_: var for var, field_ in ANSIBLE_CONNECTION_VARS.items() if var in hv}
    conn = {field_: _rendered(hv, var, host, src) for field_, var in named.items()}
    ctid = check_ctid(conn["ctid"])
    if ctid is None:
        raise InventoryError(
            f"{ctx}: proxmox_vmid {brief(conn['ctid'])} is invalid ({CTID_HELP})", where=host.where
        )
    node = _ansible_node(host, conn, named, login)
    known = nodes.setdefault(node.name, node)
    if known != node:
        raise InventoryError(
            f"{ctx}: node {node.name!r} is reached with different "
            "ansible_port/ansible_user/key file by another host",
            where=host.where,
        )
    return Container(known, ctid, host.name, vars=_strip_connection(host.vars), host=host.name)


def _rendered(hv: Mapping[str, Any], var: str, host: _AnsibleHost, src: Src) -> Any:
    """A connection variable, its template rendered with the host's variables as
    ansible-core renders it (`ansible_host: "{{ pve_addr }}"`)."""
    value = hv[var]
    if not isinstance(value, str) or "{{" not in value:
        return value
    from pctfleet.playbook.templating import render  # only an inventory with templates

    name = host.name
    scope = {**hv, "inventory_hostname": name, "inventory_hostname_short": name.split(".")[0]}
    place = Path(src.name)
    if place.is_file():
        scope |= {
            "inventory_file": str(place.absolute()),
            "inventory_dir": str(place.absolute().parent),
        }
    elif place.is_dir():
        scope["inventory_dir"] = str(place.absolute())
    try:
        return render(value, scope, where=f"host {name!r}: {var}")
    except InputError as exc:
        raise InventoryError(str(exc), where=host.where) from None


def _ansible_node(
    host: _AnsibleHost, conn: Mapping[str, Any], named: Mapping[str, str], login: NodeLogin
) -> Node:
    """The node `conn` names; what the host's variables leave out comes from ansible.cfg
    and ANSIBLE_* (`login`), then port 22 and user root."""
    ctx = f"host {host.name!r}"

    def bad(field_: str, problem: str) -> InventoryError:
        return InventoryError(f"{ctx}: {named[field_]} {problem}", where=host.where)

    if "address" not in conn:
        raise InventoryError(
            f"{ctx}: has proxmox_vmid but no ansible_host (the address of its Proxmox node)",
            where=host.where,
        )
    if problem := check_address(conn["address"]):
        raise bad("address", problem)
    port = valid_port(conn["port"]) if "port" in conn else (login.port or (22, ""))[0]
    if port is None:
        raise bad("port", f"must be an integer 1-65535, got {brief(conn['port'])}")
    user, user_from = (conn["user"], None) if "user" in conn else login.user or ("root", None)
    if problem := check_address(user):
        raise InventoryError(f"{user_from}: {problem}") if user_from else bad("user", problem)
    identity = conn.get("identity")
    if identity is not None and (not isinstance(identity, str) or not identity.strip()):
        raise bad("identity", "must be a path")
    key = expand_path(identity) if identity is not None else login.identity and login.identity[0]
    sessions = conn.get("max_sessions")
    if sessions is not None and valid_sessions(sessions) is None:
        raise bad("max_sessions", f"must be an integer >= 1, got {brief(sessions)}")
    node = Node(conn["address"], conn["address"], port, user, str(key) if key else None)
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
