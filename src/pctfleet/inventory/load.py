"""Where inventories come from: a file (either format, detected from its top
keys), YAML text or data, or the `--host`/`--ct` command-line options."""

from __future__ import annotations

import os
from collections import abc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pctfleet import ansiblecfg
from pctfleet.errors import InputError, InventoryError, brief
from pctfleet.heap import fewer_collections
from pctfleet.inventory.ansible import ANSIBLE_CONNECTION_VARS, ANSIBLE_GROUP_KEYS, parse_ansible
from pctfleet.inventory.checks import CTID_HELP, Src, check_address, check_ctid, expand_path
from pctfleet.inventory.discover import DiscoveryError, failures, read_nodes
from pctfleet.inventory.ini import UndeclaredGroup, ini_document, looks_like_ini
from pctfleet.inventory.model import Container, Inventory, Node
from pctfleet.inventory.native import NATIVE_KEYS, parse_native
from pctfleet.inventory.varfiles import VarFiles, read_now
from pctfleet.playbook import vault
from pctfleet.playbook.yamlsrc import YamlMap, load_yaml_text, read_text

MAX_CTID_RANGE = 10_000
YAML_SUFFIXES = (".yml", ".yaml", ".json")
# ansible-core's defaults: INVENTORY_IGNORE_EXTS and the names it always skips.
_SKIPPED_ENDINGS = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst")
_SKIPPED_ENDINGS += (".orig", ".cfg", ".retry")
_SKIPPED_NAMES = ("host_vars", "group_vars", "vars_plugins")


def load_inventory(
    path: str | Path | Sequence[str | Path], playbook_dir: str | Path | None = None
) -> Inventory:
    """Read a native or an Ansible inventory: a YAML file (the format detected from its
    top keys), an Ansible INI file, or a folder of Ansible inventory files. Several
    paths (-i given more than once) are read in order as one Ansible inventory, as
    ansible-core reads several sources. The group_vars/ and host_vars/ beside each
    (in a folder inventory: in it) count and, given `playbook_dir`, those beside the
    playbook (see inventory.varfiles)."""
    sources = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    if not sources:
        raise InventoryError("no inventory given")
    # ansible-core's vars plugins read each source's folder, later sources winning.
    bases = [p if p.is_dir() else p.parent for p in sources]
    folders = [*bases, *([playbook_dir] if playbook_dir is not None else [])]
    with fewer_collections():  # a fleet's nodes and containers are built in one go
        if len(sources) == 1 and not sources[0].is_dir():
            inv = inventory_from_data(read_inventory_file(sources[0]), str(sources[0]), folders)
        else:
            inv = _merged_inventory(sources, folders)
    inv.sources = [str(p) for p in sources]  # ansible_inventory_sources: each -i, in order
    read_now(inv)
    return inv


def read_inventory_file(path: Path, known_groups: abc.Container[str] = ()) -> Any:
    """One inventory file's document: YAML (the native or Ansible format), else
    Ansible's INI (a file that is no YAML mapping and reads as INI, or is named .ini).
    The YAML is parsed once, whichever it turns out to be. `known_groups`: those the
    sources read before it declared (an INI file's `:vars` and `:children` may name them)."""
    text, name = read_text(path), str(path)
    if vault.is_vaulted(text) and looks_like_ini(vault.decrypt(text, name)):
        raise InventoryError("a vault-encrypted INI inventory is not supported", where=name)
    suffix = path.suffix.lower()
    try:
        doc, problem = load_yaml_text(text, name), None
    except InputError as exc:
        doc, problem = None, exc
    ini = suffix == ".ini" or looks_like_ini(text)
    yaml_only = suffix in YAML_SUFFIXES or vault.is_vaulted(text)
    if ini and not yaml_only and not isinstance(doc, YamlMap):
        return ini_document(text, name, known_groups)
    if problem is not None:
        raise problem
    if doc is None:
        raise InventoryError("file is empty (expected an inventory mapping)", where=name)
    return doc


def _merged_inventory(sources: Sequence[Path], var_folders: Sequence[Path | str]) -> Inventory:
    """Every file of `sources` (a folder: its inventory files, as Ansible lists them),
    in order, read as one Ansible inventory; a native inventory is refused, as a
    source of several or in a folder: it has no way to merge with another."""
    files = [(path, source) for source in sources for path in _source_files(source)]
    docs: list[YamlMap] = []
    known: set[str] = set()  # as ansible-core: the groups of the sources read so far
    for index, (path, source) in enumerate(files):
        try:
            doc = read_inventory_file(path, known)
        except UndeclaredGroup as exc:
            raise _declared_later(exc, files[index + 1 :]) from None
        # Anything else is read as Ansible's: its mistakes are reported as such.
        if not isinstance(doc, YamlMap) or not doc or any(key in NATIVE_KEYS for key in doc):
            raise InventoryError(_not_merged(doc, source), where=str(path))
        known.update(group_names(doc))
        docs.append(doc)
    src = Src(", ".join(map(str, sources)))
    src.var_files = var_files(var_folders, ANSIBLE_CONNECTION_VARS)
    return parse_ansible(docs, src, ansiblecfg.read().login)


def _not_merged(doc: Any, source: Path) -> str:
    if source.is_dir():
        return "a folder inventory holds Ansible inventories (YAML or INI) only"
    if isinstance(doc, YamlMap) and doc:
        return "a native inventory is read alone (one -i): several -i merge Ansible ones only"
    return f"not an Ansible inventory (YAML or INI): got {brief(doc)}"


def _source_files(source: Path) -> list[Path]:
    if not source.is_dir():
        return [source]
    found = folder_files(source)
    if not found:
        raise InventoryError("no inventory file in this folder", where=str(source))
    return found


def _declared_later(exc: UndeclaredGroup, later: Sequence[tuple[Path, Path]]) -> InventoryError:
    """`exc`, saying which later source declares its group where one does: ansible-core
    reads sources in order, so the file must come after it (a later name, a later -i)."""
    for path, _ in later:
        try:
            doc = read_inventory_file(path, _ANY_GROUP)
        except InputError:
            continue
        if isinstance(doc, YamlMap) and exc.group in group_names(doc):
            return InventoryError(
                f"{exc.section} names group {exc.group!r}, declared only by {path}, which "
                "is read later: Ansible reads inventory sources in order (it skips this "
                "file); let the declaring file come first",
                where=exc.where,
            )
    return exc


class _AnyGroup:
    """Every group name, to read a source whatever the others declare."""

    def __contains__(self, name: object) -> bool:
        return True


_ANY_GROUP = _AnyGroup()


def group_names(doc: YamlMap) -> set[str]:
    """The groups an Ansible inventory document declares: its top keys and, under
    them, every group named in `children`."""
    found: set[str] = set()
    pending = [doc]
    while pending:
        level = pending.pop()
        for name, body in level.items():
            if not isinstance(name, str) or name in found:
                continue
            found.add(name)
            children = body.get("children") if isinstance(body, YamlMap) else None
            if isinstance(children, YamlMap):
                pending.append(children)
    return found


def folder_files(folder: Path) -> list[Path]:
    """The files ansible-core reads from an inventory folder: sorted, subfolders too,
    without hidden names, group_vars/host_vars and the extensions it ignores."""
    found: list[Path] = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name in _SKIPPED_NAMES or name.endswith(_SKIPPED_ENDINGS):
            continue
        path = folder / name
        found.extend(folder_files(path) if path.is_dir() else [path])
    return found


def inventory_from_text(text: str, name: str = "<inventory>") -> Inventory:
    """Same as `load_inventory` for YAML text held in memory (no vars folders)."""
    doc = load_yaml_text(text, name)
    if doc is None:
        raise InventoryError("inventory is empty", where=name)
    return inventory_from_data(doc, name)


def inventory_from_data(doc: Any, name: str, var_folders: Sequence[str | Path] = ()) -> Inventory:
    src = Src(name)
    if not isinstance(doc, YamlMap):
        raise src.fail(f"an inventory must be a mapping (nodes: ...), got {brief(doc)}", doc)
    ansible = _looks_like_ansible(doc)
    src.var_files = var_files(var_folders, ANSIBLE_CONNECTION_VARS if ansible else ())
    try:
        if ansible:
            return parse_ansible(doc, src, ansiblecfg.read().login)
        return parse_native(doc, src)
    except RecursionError:
        raise InventoryError("inventory is nested too deeply", where=name) from None


def with_var_files(inv: Inventory, folders: Sequence[str | Path]) -> Inventory:
    """`inv` (built without a file: --host/--ct, --connection local) with the vars
    folders given, their files read now."""
    inv.var_files = var_files(folders)
    read_now(inv)
    return inv


def var_files(folders: Sequence[str | Path], hidden: Any = ()) -> list[VarFiles]:
    """A VarFiles for each folder that has group_vars/ or host_vars/, each folder once,
    where it comes last (a playbook beside its inventory, two sources in one folder):
    ansible-core reads it at each place, and the last reading wins over whatever
    came between, so the earlier ones change nothing."""
    out: dict[str, VarFiles] = {}
    for folder in folders:
        files = VarFiles(folder, hidden)
        if not files.empty:
            out.pop(files.base, None)
            out[files.base] = files
    return list(out.values())


def _looks_like_ansible(doc: YamlMap) -> bool:
    if not doc or any(key in NATIVE_KEYS for key in doc):
        return False
    if "all" in doc:
        return True  # never a native key; report Ansible-style mistakes then
    return all(
        v is None or (isinstance(v, YamlMap) and all(k in ANSIBLE_GROUP_KEYS for k in v))
        for v in doc.values()
    )


def adhoc_inventory(
    host: str,
    ctids: Sequence[int],
    *,
    port: int = 22,
    user: str = "root",
    identity: str | None = None,
    known_hosts: str | None = None,
) -> Inventory:
    """An inventory of one node (`--host`) and some containers on it (`--ct`)."""
    problem = check_address(host) or check_address(user)
    if problem:
        raise InventoryError(f"--host/--user: {problem}")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InventoryError(f"--port: must be an integer 1-65535, got {brief(port)}")
    node = Node(host, host, port, user, expand_path(identity), expand_path(known_hosts))
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
            raise InventoryError(
                f"--ct: {part!r} is not a container id ({CTID_HELP})"
                + (" or a range low-high" if sep else "")
            )
        if last - first >= MAX_CTID_RANGE:
            raise InventoryError(f"--ct: range {part!r} holds more than {MAX_CTID_RANGE} ids")
        out.update(dict.fromkeys(range(first, last + 1)))
    return list(out)


def resolve_discovery(inv: Inventory, options: Any = None, forks: int = 10) -> Inventory:  # noqa: ANN401
    """`inv` with the containers of its `discover:` nodes read from the nodes
    (`options`: ConnectOptions over the nodes' own settings). A node that cannot
    be read raises DiscoveryError: it is never taken to have no containers."""
    if inv.discovery is None:
        return inv
    from pctfleet.transport.options import ConnectOptions

    pending = inv.discovery
    nodes = [inv.nodes[name] for name in pending.rules]
    found = read_nodes(nodes, options or ConnectOptions(), forks)
    problems = failures(found)
    if problems:
        raise DiscoveryError("cannot discover containers: " + "; ".join(problems))
    resolved = parse_native(pending.doc, pending.src, {f.node.name: f.containers for f in found})
    read_now(resolved)
    return resolved
