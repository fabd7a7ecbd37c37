"""Groups as both formats write them, closed over their children."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pctfleet.errors import InventoryError
from pctfleet.inventory.model import Container, Group


@dataclass
class GroupSpec:
    """A group as written: direct member ids, children, vars, where it is."""

    members: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    where: str = ""
    priority: int = 1  # Ansible's ansible_group_priority: orders groups of one depth
    member_set: set[str] = field(default_factory=set)  # `members`, to look up fast


def resolve_groups(specs: Mapping[str, GroupSpec]) -> dict[str, Group]:
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
    return {
        name: Group(
            name,
            tuple(members[name]),
            tuple(spec.children),
            tuple(sorted(parents[name])),
            depth[name],
            spec.vars,
            spec.priority,
        )
        for name, spec in specs.items()
    }


def by_precedence(groups: Mapping[str, Group]) -> list[Group]:
    """Groups in variable precedence order: depth, then ansible_group_priority, then name."""
    return sorted(groups.values(), key=lambda g: (g.depth, g.priority, g.name))


def with_groups(containers: Sequence[Container], groups: Mapping[str, Group]) -> list[Container]:
    """Give each container its groups, in precedence order."""
    groups_of: dict[str, list[str]] = {}
    for g in by_precedence(groups):
        for key in g.members:
            groups_of.setdefault(key, []).append(g.name)
    return [replace(ct, groups=tuple(groups_of.get(ct.key, ()))) for ct in containers]


def _depth_of(name: str, parents: Mapping[str, list[str]], memo: dict[str, int]) -> int:
    """Longest path from the top: a child always sorts after its parents."""
    if name not in memo:
        memo[name] = 1 + max((_depth_of(p, parents, memo) for p in parents[name]), default=0)
    return memo[name]


def _members_of(name: str, specs: Mapping[str, GroupSpec], memo: dict[str, list[str]]) -> list[str]:
    if name not in memo:
        out = dict.fromkeys(specs[name].members)
        for child in specs[name].children:
            out.update(dict.fromkeys(_members_of(child, specs, memo)))
        memo[name] = list(out)
    return memo[name]


def _check_cycles(specs: Mapping[str, GroupSpec]) -> None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 1:
            cycle = " -> ".join(path[path.index(name) :] + [name])
            raise InventoryError(
                f"group cycle in 'children': {cycle}", where=specs[path[path.index(name)]].where
            )
        if state.get(name) == 2:
            return
        state[name] = 1
        for child in specs[name].children:
            visit(child, [*path, name])
        state[name] = 2

    for name in specs:
        visit(name, [])
