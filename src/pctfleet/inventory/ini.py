"""Ansible's INI inventories, read as ansible-core's `ini` plugin reads them and handed
on as the YAML inventory that says the same (with each line's number kept).

    h0 proxmox_vmid=199          # before any section: ungrouped
    [gpu]
    gpu-a proxmox_vmid=200 ansible_host=10.1.2.6
    gpu-b:2222 proxmox_vmid=201  # a port: ansible_port
    [gpu:vars]
    ansible_user=root
    [fleet:children]
    gpu

A value is a Python literal where it reads as one (`200` an int, `True` a bool,
`[1, 2]` a list; `'200'` stays text only inside double quotes, as shlex takes the
outer quotes off a host line), else text; in ansible-core 2.19 that holds for
`:vars` lines too. A group named in `:children` or `:vars` must exist once the file
is read: declared by a section of its own anywhere in the file, or by an inventory
source read before it (ansible-core checks against the inventory built so far, so a
group only a later source declares is an error there too).
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from collections.abc import Container
from typing import Any

from pctfleet.errors import InventoryError
from pctfleet.inventory.hostrange import expand_hosts
from pctfleet.playbook.yamlsrc import YamlMap

_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")
_BRACKETS = re.compile(r"\[[^\]]*\]")
_COMMENT = (";", "#")
# Groups every inventory has: their `:vars` need no section; as a child, ansible-core
# refuses `all` and drops the hosts of `ungrouped`, so a child never names them.
BUILTIN_GROUPS = frozenset({"all", "ungrouped"})


class UndeclaredGroup(InventoryError):
    """A `:vars` or `:children` section names a group that does not exist."""

    def __init__(self, section: str, group: str, where: str) -> None:
        if section.endswith(":vars]"):
            text = f"{section} is for a group declared nowhere"
        else:
            text = f"{section} names a group declared nowhere: {group!r}"
        super().__init__(text, where=where)
        self.section, self.group, self.where = section, group, where


def looks_like_ini(text: str) -> bool:
    """A `[section]` line anywhere, or a first entry that is a host with key=value pairs."""
    lines = [raw.strip() for raw in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith(_COMMENT)]
    if any(line.startswith("[") and line.endswith("]") for line in lines):
        return True
    return bool(lines) and "=" in lines[0].partition(" ")[2]


def ini_document(text: str, name: str, known: Container[str] = ()) -> YamlMap:
    """The inventory in `text` as the Ansible YAML document parse_ansible reads.
    `known`: the groups the inventory sources read before this one declared."""
    return _Reader(name, known).read(text)


class _Reader:
    def __init__(self, name: str, known: Container[str] = ()) -> None:
        self.name = name
        self.line = 0
        self.doc = self._map(0)
        self.group("all")  # first: the hosts' own variables are kept there (see _hosts)
        self.known = known
        self.declared: set[str] = set()
        self.pending: dict[str, tuple[int, str, str]] = {}  # group -> (line, state, parent)

    def fail(self, message: str, line: int | None = None) -> InventoryError:
        return InventoryError(message, where=f"{self.name}:{self.line if line is None else line}")

    def _map(self, line: int) -> YamlMap:
        made = YamlMap()
        made.file, made.line = self.name, line
        return made

    def group(self, name: str) -> YamlMap:
        if name not in self.doc:
            self.doc[name] = self._map(self.line)
            self.doc.key_lines[name] = self.line
        return self.doc[name]

    def part(self, group: str, key: str) -> YamlMap:
        body = self.group(group)
        if key not in body:
            body[key] = self._map(self.line)
            body.key_lines[key] = self.line
        return body[key]

    def put(self, into: YamlMap, key: str, value: Any) -> None:
        into[key] = value
        into.key_lines[key] = self.line

    def read(self, text: str) -> YamlMap:
        group, state = "all", "hosts"
        for self.line, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith(_COMMENT):
                continue
            if section := _SECTION.match(line):
                group, state = self._section(section.group(1), section.group(2) or "hosts")
            elif line.startswith("[") and line.endswith("]"):
                raise self.fail(f"invalid section {line!r} (no spaces in a section name)")
            elif state == "hosts":
                self._hosts(group, line)
            elif state == "vars":
                key, sep, value = line.partition("=")
                if not sep:
                    raise self.fail(f"expected key=value, got {line!r}")
                self.put(self.part(group, "vars"), key.strip(), _value(value.strip()))
            else:
                self._child(group, line)
        for name, (line, state, parent) in self.pending.items():
            section = f"[{name}:vars]" if state == "vars" else f"[{parent}:children]"
            raise UndeclaredGroup(f"section {section}", name, f"{self.name}:{line}")
        return self.doc

    def _section(self, name: str, state: str) -> tuple[str, str]:
        if state not in ("hosts", "children", "vars"):
            raise self.fail(f"section [{name}:{state}] has an unknown type: {state!r}")
        if state == "vars" and name not in BUILTIN_GROUPS and not self._exists(name):
            self.pending.setdefault(name, (self.line, state, ""))
        else:
            self.declared.add(name)
            self.pending.pop(name, None)
        self.group(name)
        return name, state

    def _exists(self, group: str) -> bool:
        return group in self.declared or group in self.known

    def _hosts(self, group: str, line: str) -> None:
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError as exc:
            raise self.fail(f"cannot read the host line {line!r}: {exc}") from None
        host, port = self._host_and_port(tokens[0])
        values: dict[str, Any] = {}
        for token in tokens[1:]:
            key, sep, value = token.partition("=")
            if not sep:
                raise self.fail(f"expected key=value after the host name, got {token!r}")
            values[key] = _value(value)
        if port is not None:
            values["ansible_port"] = port
        # A host's variables apply in line order whatever its groups (Ansible sets them
        # on the host as it reads): they all go to its entry under `all`, and the group
        # only lists it.
        for name in expand_hosts(host, f"{self.name}:{self.line}"):
            self._host(group, name, values)

    def _host(self, group: str, name: str, values: dict[str, Any]) -> None:
        hosts = self.part("all", "hosts")
        entry = hosts.get(name)
        if entry is None:
            entry = self._map(self.line)
            self.put(hosts, name, entry)
        for key, value in values.items():
            self.put(entry, key, value)
        if group != "all":
            self.put(self.part(group, "hosts"), name, None)

    def _host_and_port(self, token: str) -> tuple[str, int | None]:
        if token.startswith("["):
            raise self.fail(
                f"{token!r}: a bracketed address as host name is not supported; "
                "name the host and set ansible_host"
            )
        outside = _BRACKETS.sub("", token)  # a range's ':' is not a port's
        if ":" not in outside:
            return token, None
        name, _, port = token.rpartition(":")
        if outside.count(":") > 1 or not port.isdigit():
            raise self.fail(f"{token!r}: the port after ':' must be a number")
        return name, int(port)

    def _child(self, group: str, line: str) -> None:
        named = _GROUP_NAME.match(line)
        if not named:
            raise self.fail(f"expected a group name, got {line!r}")
        child = named.group(1)
        if child in BUILTIN_GROUPS or not self._exists(child):
            self.pending.setdefault(child, (self.line, "children", group))
        self.put(self.part(group, "children"), child, None)


def _value(text: str) -> Any:
    """ansible-core's reading of an INI value: a Python literal, else the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text
    return _coerce(value)


def _coerce(value: Any) -> Any:
    if isinstance(value, list | tuple | set):
        return [_coerce(v) for v in value]
    if isinstance(value, dict):
        return {k: _coerce(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="surrogateescape")
    if value is ...:
        return "..."
    return str(value) if isinstance(value, complex) else value
