"""Inventory: which Proxmox nodes exist, which containers live on them, and their vars.

Two file formats are read (docs/inventory.md describes both):

* the native one, with `defaults`, `vars`, `nodes` and `groups` at the top
  (`native`);
* an Ansible YAML inventory written for `community.proxmox.proxmox_pct_remote`,
  where each host with `proxmox_vmid` is a container on the node `ansible_host`
  (`ansible`).

Both produce the same `Inventory` (`model`). Every mistake in the file is an
`InventoryError` whose one-line message starts with `file:line`. `load` picks
the reader and builds ad-hoc inventories from `--host/--ct`; `limit` matches
`--limit` patterns; `checks` holds the validators both readers share;
`extravars` reads `-e`.
"""

from pctfleet.inventory.checks import CTID_MAX, CTID_MIN, VAR_NAME_RE
from pctfleet.inventory.extravars import parse_extra_vars
from pctfleet.inventory.load import (
    adhoc_inventory,
    inventory_from_text,
    load_inventory,
    parse_ctids,
)
from pctfleet.inventory.model import Container, Inventory, Node
from pctfleet.inventory.native import NODE_KEYS

__all__ = [
    "CTID_MAX",
    "CTID_MIN",
    "NODE_KEYS",
    "VAR_NAME_RE",
    "Container",
    "Inventory",
    "Node",
    "adhoc_inventory",
    "inventory_from_text",
    "load_inventory",
    "parse_ctids",
    "parse_extra_vars",
]
