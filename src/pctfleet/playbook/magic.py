"""Ansible's magic variables: what a play knows about its hosts and its run.

The play-wide part (`groups`, `hostvars`, `play_hosts`, `omit`, ...) is built
once per play and shared by every container; `for_container` adds the
per-host part. `hostvars` holds each inventory host's inventory variables and
magic variables, never what a run produced on it (registered results,
set_fact, gathered facts): those stay with the host that made them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pctfleet.inventory.limit import ansible_order
from pctfleet.playbook.templating import LazyVars, Public

# A parameter rendered to this value is dropped, as Ansible does: `{{ x | default(omit) }}`.
OMIT = f"__omit_place_holder__{secrets.token_hex(20)}"


def drop_omitted(value: Any) -> Any:
    """`value` without any mapping entry or list item whose value is `omit`."""
    if type(value) in (str, int, float, bool) or value is None:  # no ABC check for scalars
        return value
    if isinstance(value, Mapping):
        return {k: drop_omitted(v) for k, v in value.items() if v != OMIT}
    if isinstance(value, list):
        return [drop_omitted(v) for v in value if v != OMIT]
    return value


def host_vars(container: Any) -> dict[str, Any]:
    """The per-host magic variables (inventory_hostname comes from the inventory)."""
    name = container.inventory_hostname
    return {
        "inventory_hostname": name,
        "inventory_hostname_short": name.split(".")[0],
        "ansible_host": container.node.address,
        "group_names": sorted(container.groups) or ["ungrouped"],
    }


class PlayMagic:
    """The magic variables of one play, for each of its containers."""

    def __init__(
        self,
        inventory: Any,
        play_containers: list,
        options: Any,
        playbook_dir: str,
        batch: list | None = None,
    ) -> None:
        hosts = Public(c.inventory_hostname for c in play_containers)
        # As Ansible: play_hosts and ansible_play_batch are the `serial` batch's hosts.
        in_batch = hosts if batch is None else Public(c.inventory_hostname for c in batch)
        self.shared: dict[str, Any] = {
            "groups": groups(inventory),
            "hostvars": HostVars(inventory),
            "play_hosts": in_batch,
            "ansible_play_hosts": hosts,
            "ansible_play_hosts_all": hosts,
            "ansible_play_batch": in_batch,
            "ansible_check_mode": bool(options.check),
            "ansible_diff_mode": bool(options.diff),
            "ansible_verbosity": getattr(options, "verbosity", 0),
            "playbook_dir": playbook_dir,
            "ansible_run_tags": sorted(options.tags or {"all"}),
            "ansible_skip_tags": sorted(options.skip_tags or ()),
            "omit": OMIT,
            **inventory_files(inventory),
        }

    def for_container(self, container: Any) -> dict[str, Any]:
        return {**self.shared, **host_vars(container)}


def inventory_files(inventory: Any) -> dict[str, Any]:
    """`inventory_dir`, `inventory_file` and `ansible_inventory_sources`, as Ansible sets
    them, for an inventory read from files (a folder: no one file to name)."""
    sources = [Path(s).absolute() for s in getattr(inventory, "sources", [inventory.source])]
    sources = [path for path in sources if path.exists()]
    if not sources:  # --local, or an inventory from text
        return {}
    found: dict[str, Any] = {"ansible_inventory_sources": [str(path) for path in sources]}
    first = sources[0]
    if len(sources) == 1 and first.is_file():
        found |= {"inventory_file": str(first), "inventory_dir": str(first.parent)}
    elif len(sources) == 1:
        found["inventory_dir"] = str(first)
    return found


def groups(inventory: Any) -> dict[str, list[str]]:
    """Group name -> member host names, with `all` and `ungrouped`: in an Ansible
    inventory in ansible-core's order (a group's own hosts, then its children's, level
    by level; `all` walked so), else in inventory order."""
    name_of = {c.key: c.inventory_hostname for c in inventory.containers}
    if any(c.host for c in inventory.containers):
        order = ansible_order(inventory.groups, list(name_of))
        names = sorted(order, key=lambda name: (name != "all", name != "ungrouped"))
        return {name: Public(name_of[k] for k in order[name] if k in name_of) for name in names}
    out = {"all": Public(name_of.values())}
    out["ungrouped"] = Public(c.inventory_hostname for c in inventory.containers if not c.groups)
    for name, group in inventory.groups.items():
        out[name] = Public(name_of[key] for key in group.members if key in name_of)
    return out


class HostEntry(Mapping):
    """One host's `hostvars` entry: a template in it is rendered with that host's own
    variables when read (`hostvars['b'].url` is b's url, as in Ansible), one at a time,
    so reading one variable runs no other's lookups."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self._lazy = LazyVars(raw)

    def __getitem__(self, key: str) -> Any:
        if key not in self.raw:
            raise KeyError(key)  # jinja's undefined, not the globals LazyVars also holds
        return self._lazy[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


class HostVars:
    """`hostvars`: a host's variables built when a template asks for them.

    Deliberately not a Mapping: the fleet's variables are not copied into every
    container's scope, and redaction, which walks a container's mappings and
    lists for secrets, does not walk every other host's variables (O(hosts²)).
    """

    def __init__(self, inventory: Any) -> None:
        self._inventory = inventory
        self._by_name = {c.inventory_hostname: c for c in inventory.containers}
        self._built: dict[str, HostEntry] = {}

    def __getitem__(self, name: str) -> HostEntry:
        if name not in self._built:
            container = self._by_name[name]  # KeyError: jinja's undefined
            raw = {**self._inventory.vars_for(container), **host_vars(container)}
            self._built[name] = HostEntry(raw)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def keys(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._by_name else default
