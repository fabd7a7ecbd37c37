"""The native inventory format: `defaults`, `vars`, `nodes` and `groups`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pctfleet.errors import brief, did_you_mean
from pctfleet.inventory.checks import (
    CTID_HELP,
    NAME_RE,
    Src,
    check_connection,
    check_ctid,
    check_keys,
    check_name,
    check_vars,
    check_word,
    empty_map,
    mapping,
    name_of,
)
from pctfleet.inventory.discover import STATUSES, FoundCT, Rule
from pctfleet.inventory.groups import GroupSpec, resolve_groups, with_groups
from pctfleet.inventory.model import Container, Discovery, Inventory, Node
from pctfleet.playbook.yamlsrc import YamlList, YamlMap

NATIVE_KEYS = ("defaults", "vars", "nodes", "groups")
CONNECTION_KEYS = ("user", "port", "identity", "known_hosts", "ssh_options", "max_sessions")
NODE_KEYS = ("address", *CONNECTION_KEYS, "vars", "containers", "discover")
DISCOVER_KEYS = ("tags", "status")
CONTAINER_KEYS = ("name", "vars")
GROUP_KEYS = ("containers", "nodes", "children", "vars")
RESERVED_GROUPS = ("all",)


def parse_native(
    doc: YamlMap, src: Src, found: Mapping[str, Sequence[FoundCT]] | None = None
) -> Inventory:
    """The inventory in `doc`. Nodes with `discover:` get the containers `found`
    on them that match their rule; without `found` they have none yet, and the
    inventory's `rules` say which nodes to read (groups are then checked later)."""
    check_keys(src, doc, NATIVE_KEYS, "inventory")
    defaults_map = mapping(src, doc, "defaults", "defaults")
    check_keys(src, defaults_map, CONNECTION_KEYS, "defaults")
    defaults = check_connection(src, defaults_map, "defaults")
    all_vars = check_vars(src, doc, "vars", "vars")
    nodes_map = mapping(src, doc, "nodes", "nodes")
    if not nodes_map:
        raise src.fail("the inventory defines no nodes (add a 'nodes' mapping)", doc, "nodes")
    nodes: dict[str, Node] = {}
    containers: list[Container] = []
    ct_names: dict[str, str] = {}
    rules: dict[str, Rule] = {}
    for key in nodes_map:
        node, body = _parse_node(src, nodes_map, key, defaults)
        if node.name in nodes:
            raise src.fail(f"node {node.name!r} is defined twice", nodes_map, key)
        nodes[node.name] = node
        if "discover" in body:
            rules[node.name] = _parse_rule(src, body, node.name)
            containers += _discovered(node, rules[node.name], found, ct_names)
        else:
            containers += _parse_containers(src, node, body, ct_names)
    pending = bool(rules) and found is None
    groups = {} if pending else resolve_groups(_parse_groups(src, doc, nodes, containers))
    inv = Inventory(nodes, with_groups(containers, groups), groups, all_vars, src.name)
    inv.var_files = src.var_files
    inv.discovery = Discovery(rules, doc, src) if pending else None
    inv.rules = rules
    return inv


def _parse_rule(src: Src, body: YamlMap, node: str) -> Rule:
    ctx = f"node {node!r}"
    if "containers" in body:
        raise src.fail("give either 'containers' or 'discover', not both", body, "discover")
    rule = mapping(src, body, "discover", f"{ctx}: discover")
    check_keys(src, rule, DISCOVER_KEYS, f"{ctx}: discover")
    tags = rule.get("tags")
    tags = [] if tags is None else tags
    if not isinstance(tags, (list, YamlList)) or not all(isinstance(t, str) and t for t in tags):
        raise src.fail(f"'tags' must be a list of tag names, got {brief(tags)}", rule, "tags")
    status = rule.get("status")
    if status is not None and status not in STATUSES:
        raise src.fail(
            f"'status' must be one of {', '.join(STATUSES)}, got {brief(status)}", rule, "status"
        )
    return Rule(tuple(tags), status)


def _discovered(
    node: Node,
    rule: Rule,
    found: Mapping[str, Sequence[FoundCT]] | None,
    ct_names: dict[str, str],
) -> list[Container]:
    """The node's containers that match its rule; their host names become their
    names where they are valid and not taken (else they are known by key)."""
    out = []
    for ct in (found or {}).get(node.name, ()):
        if not rule.matches(ct):
            continue
        name = ct.name if ct.name and NAME_RE.match(ct.name) else None
        if name in ct_names:
            name = None
        if name:
            ct_names[name] = f"{node.name}/{ct.ctid}"
        out.append(Container(node, ct.ctid, name))
    return out


def _parse_node(
    src: Src, nodes_map: YamlMap, key: Any, defaults: Mapping[str, Any]
) -> tuple[Node, YamlMap]:
    name = check_name(src, key, "node", nodes_map, key)
    ctx = f"node {name!r}"
    body = mapping(src, nodes_map, key, ctx)
    check_keys(src, body, NODE_KEYS, ctx)
    conn = {**defaults, **check_connection(src, body, ctx)}
    conn["ssh_options"] = {**defaults.get("ssh_options", {}), **conn.get("ssh_options", {})}
    address = check_word(src, body, "address", ctx, body.get("address", name))
    node = Node(name=name, address=address, vars=check_vars(src, body, "vars", ctx), **conn)
    return node, body


def _parse_containers(
    src: Src, node: Node, body: YamlMap, ct_names: dict[str, str]
) -> list[Container]:
    raw = body.get("containers")
    table: YamlMap | YamlList = (
        raw
        if isinstance(raw, YamlList)
        else mapping(src, body, "containers", f"node {node.name!r}")
    )
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


def _parse_container(
    src: Src,
    node: Node,
    parent: YamlMap | YamlList,
    key: Any,
    raw_ctid: Any,
    entry: Any,
    ct_names: dict[str, str],
) -> Container:
    ctx = f"node {node.name!r}"
    ctid = check_ctid(raw_ctid)
    if ctid is None:
        raise src.fail(
            f"container id {brief(raw_ctid)} is invalid ({CTID_HELP})", parent, key, ctx=ctx
        )
    ctx = f"container {node.name}/{ctid}"
    if entry is not None and not isinstance(entry, YamlMap):
        raise src.fail(
            f"must be a mapping (name, vars) or empty, got {brief(entry)}", parent, key, ctx=ctx
        )
    entry = entry if entry is not None else empty_map(src, parent.line_of(key))
    check_keys(src, entry, CONTAINER_KEYS, ctx)
    name = entry.get("name")
    if name is not None:
        name = check_name(src, name, "container", entry, "name")
        if name in ct_names:
            raise src.fail(
                f"container name {name!r} is already used by {ct_names[name]}",
                entry,
                "name",
                ctx=ctx,
            )
        ct_names[name] = f"{node.name}/{ctid}"
    return Container(node, ctid, name, vars=check_vars(src, entry, "vars", ctx))


def _parse_groups(
    src: Src, doc: YamlMap, nodes: Mapping[str, Node], containers: Sequence[Container]
) -> dict[str, GroupSpec]:
    table = mapping(src, doc, "groups", "groups")
    names = {}
    for key in table:
        name = check_name(src, key, "group", table, key)
        if name in RESERVED_GROUPS:
            raise src.fail(
                f"group name {name!r} is reserved (it means every container)", table, key
            )
        names[name] = key
    by_ref = {c.key: c.key for c in containers} | {c.name: c.key for c in containers if c.name}
    return {
        name: _parse_group(src, table, key, name, names, nodes, containers, by_ref)
        for name, key in names.items()
    }


def _parse_group(
    src: Src,
    table: YamlMap,
    key: Any,
    name: str,
    groups: Mapping[str, Any],
    nodes: Mapping[str, Node],
    containers: Sequence[Container],
    by_ref: Mapping[str, str],
) -> GroupSpec:
    ctx = f"group {name!r}"
    body = mapping(src, table, key, ctx)
    check_keys(src, body, GROUP_KEYS, ctx)
    spec = GroupSpec(vars=check_vars(src, body, "vars", ctx), where=table.where(key))
    for ref in _name_list(src, body, "containers", ctx, by_ref, "container"):
        spec.members.append(by_ref[ref])
    for ref in _name_list(src, body, "nodes", ctx, nodes, "node"):
        spec.members += [c.key for c in containers if c.node.name == ref]
    spec.children = _name_list(src, body, "children", ctx, groups, "group")
    return spec


def _name_list(
    src: Src, body: YamlMap, key: str, ctx: str, known: Mapping[str, Any], kind: str
) -> list[str]:
    """`body[key]` as a list of references that must all be in `known`."""
    raw = body.get(key)
    if raw is None:
        return []
    if not isinstance(raw, YamlList):
        raise src.fail(f"{key!r} must be a list, got {brief(raw)}", body, key, ctx=ctx)
    out = []
    for i, item in enumerate(raw):
        ref = name_of(item)
        if not isinstance(ref, str) or ref not in known:
            raise src.fail(
                f"unknown {kind} {brief(item)} in {key!r}" + did_you_mean(ref, known),
                raw,
                i,
                ctx=ctx,
            )
        out.append(ref)
    return out
