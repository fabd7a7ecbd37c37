"""Validators shared by the inventory readers.

Each `check_*` taking a `Src` raises an `InventoryError` located at the
offending key (`file:line`); the plain ones (`check_address`, `check_ctid`,
`as_int`) return a verdict for callers that report their own way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from pctfleet.errors import InventoryError, brief, did_you_mean
from pctfleet.playbook.yamlsrc import YamlList, YamlMap, plain

CTID_MIN = 100
CTID_MAX = 999_999_999
CTID_HELP = f"integers {CTID_MIN}-{CTID_MAX}"
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")
VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DIGITS_RE = re.compile(r"\s*[0-9]{1,12}\s*\Z")


class Src:
    """The file being read, to build `file:line` for values without positions."""

    def __init__(self, name: str, var_files: Sequence[Any] = ()) -> None:
        self.name = name
        # group_vars/host_vars folders (VarFiles) beside the inventory and the playbook.
        self.var_files = list(var_files)

    def fail(
        self, message: str, obj: Any = None, key: Any = None, *, ctx: str = ""
    ) -> InventoryError:
        where = obj.where(key) if isinstance(obj, YamlMap | YamlList) else self.name
        return InventoryError(f"{ctx}: {message}" if ctx else message, where=where)


def check_keys(src: Src, m: YamlMap, allowed: Sequence[str], ctx: str) -> None:
    for key in m:
        if key not in allowed:
            raise src.fail(
                f"unknown key {brief(key)}{did_you_mean(key, allowed)}; "
                f"expected one of: {', '.join(allowed)}",
                m,
                key,
                ctx=ctx,
            )


def empty_map(src: Src, line: int) -> YamlMap:
    """An empty mapping standing for a `null` entry, at that entry's line."""
    empty = YamlMap()
    empty.file, empty.line = src.name, line
    return empty


def mapping(src: Src, parent: YamlMap, key: Any, ctx: str) -> YamlMap:
    """`parent[key]` as a mapping; a missing key or `null` gives an empty one."""
    value = parent.get(key)
    if value is None:
        return empty_map(src, parent.line_of(key))
    if not isinstance(value, YamlMap):
        raise src.fail(f"{brief(key)} must be a mapping, got {brief(value)}", parent, key, ctx=ctx)
    return value


def name_of(value: Any) -> Any:
    """A YAML integer key or list item read as the name it spells."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def check_name(src: Src, value: Any, kind: str, m: YamlMap, key: Any) -> str:
    value = name_of(value)
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise src.fail(
            f"{kind} name {brief(value)} is invalid (letters, digits, '_', '.', '-')", m, key
        )
    return value


def as_int(value: Any) -> int | None:
    """An int, or a string of ASCII digits, as int; None for anything else."""
    if isinstance(value, str) and _DIGITS_RE.match(value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def valid_port(value: Any) -> int | None:
    port = as_int(value)
    return port if port is not None and 1 <= port <= 65535 else None


def check_port(src: Src, m: YamlMap, key: str, ctx: str) -> int:
    value = valid_port(m[key])
    if value is None:
        raise src.fail(f"{key!r} must be an integer 1-65535, got {brief(m[key])}", m, key, ctx=ctx)
    return value


def check_address(value: Any) -> str | None:
    """Why `value` is not a usable host address, or None if it is."""
    if not isinstance(value, str) or not value:
        return f"must be a non-empty string, got {brief(value)}"
    if any(ch.isspace() for ch in value) or value.startswith("-"):
        # A leading '-' would be read as an option by ssh; spaces are never valid.
        return f"must not contain whitespace or start with '-', got {brief(value)}"
    return None


def check_word(src: Src, m: YamlMap, key: str, ctx: str, value: Any = None) -> str:
    """`m[key]` (or `value`) as an address or user name that is safe to hand to ssh."""
    value = m[key] if value is None else value
    problem = check_address(value)
    if problem:
        raise src.fail(f"{key!r} {problem}", m, key, ctx=ctx)
    return value


def check_text(src: Src, m: YamlMap, key: str, ctx: str) -> str:
    value = m[key]
    if not isinstance(value, str) or not value.strip():
        raise src.fail(f"{key!r} must be a non-empty string, got {brief(value)}", m, key, ctx=ctx)
    return value


def check_ctid(value: Any) -> int | None:
    """`value` as a container id, or None when it is not one."""
    value = as_int(value)
    return value if value is not None and CTID_MIN <= value <= CTID_MAX else None


def check_vars(src: Src, parent: YamlMap, key: Any, ctx: str) -> dict[str, Any]:
    m = mapping(src, parent, key, ctx)
    for name in m:
        if not isinstance(name, str) or not VAR_NAME_RE.match(name):
            raise src.fail(
                f"variable name {brief(name)} is invalid (letters, digits "
                "and '_', not starting with a digit)",
                m,
                name,
                ctx=ctx,
            )
    return plain(m)


def expand_path(path: str | None) -> str | None:
    """`~` expanded in a key or known_hosts path; None or '' gives None."""
    return os.path.expanduser(path) if path else None


def check_connection(src: Src, m: YamlMap, ctx: str) -> dict[str, Any]:
    """The connection settings present in `m` (defaults or a node), validated."""
    out: dict[str, Any] = {}
    if "port" in m:
        out["port"] = check_port(src, m, "port", ctx)
    if "user" in m:
        out["user"] = check_word(src, m, "user", ctx)
    for key in ("identity", "known_hosts"):
        if key in m and m[key] is not None:
            out[key] = os.path.expanduser(check_text(src, m, key, ctx))
    if "ssh_options" in m:
        out["ssh_options"] = _check_ssh_options(src, m, ctx)
    if "max_sessions" in m:
        out["max_sessions"] = check_sessions(src, m, "max_sessions", ctx)
    return out


def valid_sessions(value: Any) -> int | None:
    count = as_int(value)
    return count if count is not None and count >= 1 else None


def check_sessions(src: Src, m: YamlMap, key: str, ctx: str) -> int:
    """A node's channel limit (sshd's MaxSessions): a whole number, at least 1."""
    value = valid_sessions(m[key])
    if value is None:
        raise src.fail(f"{key!r} must be an integer >= 1, got {brief(m[key])}", m, key, ctx=ctx)
    return value


def _check_ssh_options(src: Src, parent: YamlMap, ctx: str) -> dict[str, Any]:
    m = mapping(src, parent, "ssh_options", ctx)
    for key, value in m.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
            raise src.fail(
                f"ssh_options entry {brief(key)} must map a name to a scalar, got {brief(value)}",
                m,
                key,
                ctx=ctx,
            )
        _check_ssh_option(src, m, key, value, ctx)
    return dict(m)


# ssh_config options `ssh_options` may set, as ssh spells them; they act like `ssh -o`.
SSH_OPTIONS = {
    k.lower(): k
    for k in ("ProxyJump", "ProxyCommand", "ServerAliveInterval", "StrictHostKeyChecking")
}
# ssh_config options the inventory has a key of its own for.
OWN_KEY_OF = {
    "user": "user",
    "port": "port",
    "identityfile": "identity",
    "userknownhostsfile": "known_hosts",
    "hostname": "address",
}


def _check_ssh_option(src: Src, m: YamlMap, key: str, value: Any, ctx: str) -> None:
    name = key.lower()
    if name not in SSH_OPTIONS:
        own = OWN_KEY_OF.get(name)
        known = ", ".join(SSH_OPTIONS.values())
        hint = f"use the {own!r} key" if own else f"supported: {known}"
        raise src.fail(f"ssh_options: {key!r} is not supported ({hint})", m, key, ctx=ctx)
    said = ("yes" if value else "no") if isinstance(value, bool) else str(value)
    if name == "stricthostkeychecking" and said.lower() not in ("yes", "accept-new"):
        raise src.fail(
            f"ssh_options: StrictHostKeyChecking {said}: only yes or "
            "accept-new (a changed host key is always refused)",
            m,
            key,
            ctx=ctx,
        )
