"""`-e` extra vars: `k=v` pairs, `@file`, or an inline JSON/YAML mapping."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from pctfleet.errors import InventoryError, brief
from pctfleet.inventory.checks import VAR_NAME_RE
from pctfleet.playbook.yamlsrc import load_yaml, load_yaml_text, plain


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
            raise InventoryError(f"-e: expected name=value, @file or a mapping, got {brief(word)}")
        out[name] = value
    return out
