"""Ansible's `version` test (and `version_compare` filter): `torch is version('2.5',
'>=')`, with `strict=true` or `version_type` one of loose, strict, semver (semantic)
and pep440, each read as ansible-core reads that kind of version."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

OPERATORS = {
    "<": "__lt__", "lt": "__lt__", "<=": "__le__", "le": "__le__",
    ">": "__gt__", "gt": "__gt__", ">=": "__ge__", "ge": "__ge__",
    "==": "__eq__", "=": "__eq__", "eq": "__eq__",
    "!=": "__ne__", "<>": "__ne__", "ne": "__ne__",
}  # fmt: skip


class VersionError(ValueError):
    """A comparison ansible-core's test refuses, in its words."""


def loose_key(text: Any) -> tuple:
    """`"13.0.88"` -> (13, 0, 88); text parts compare after numbers."""
    return tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-+_]", str(text)) if p
    )


_STRICT = re.compile(r"^(\d+)\.(\d+)(\.(\d+))?([ab](\d+))?$", re.ASCII)


def strict_key(text: Any) -> tuple:
    """distutils' StrictVersion: `1.2`, `1.2.3`, `1.2a1`; a pre-release sorts first."""
    found = _STRICT.match(str(text))
    if not found:
        raise VersionError(f"invalid version number '{text}'")
    major, minor, _, patch, pre, pre_number = found.groups()
    release = (int(major), int(minor), int(patch or 0))
    return (*release, (0, pre, int(pre_number)) if pre else (1, "", 0))


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def semver_key(text: Any) -> tuple:
    """Semantic Versioning 2.0: build metadata ignored, a pre-release before its release,
    its dot parts numeric before alphanumeric."""
    found = _SEMVER.match(str(text))
    if not found:
        raise VersionError(f"invalid semantic version '{text}'")
    major, minor, patch, pre, _ = found.groups()
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in (pre or "").split("."))
    return (int(major), int(minor), int(patch), (0, parts) if pre else (1, ()))


def pep440_key(text: Any) -> Any:
    from packaging.version import InvalidVersion, Version  # only when asked: start-up time

    try:
        return Version(str(text))
    except InvalidVersion:
        raise VersionError(f"Invalid version: '{text}'") from None


KINDS: dict[str, Callable[[Any], Any]] = {
    "loose": loose_key,
    "strict": strict_key,
    "semver": semver_key,
    "semantic": semver_key,
    "pep440": pep440_key,
}


def compare(
    value: Any, other: Any, op: str = "==", strict: Any = None, version_type: Any = None
) -> bool:
    """`value op other` read as `version_type` (loose unless `strict` or given)."""
    if strict is not None and version_type is not None:
        raise VersionError("Cannot specify both 'strict' and 'version_type'")
    if not value:
        raise VersionError("Input version value cannot be empty")
    if not other:
        raise VersionError("Version parameter to compare against cannot be empty")
    kind = "strict" if strict else (version_type or "loose")
    if kind not in KINDS:
        choices = ", ".join(map(repr, KINDS))
        raise VersionError(f"Invalid version type ({kind}). Must be one of {choices}")
    if op not in OPERATORS:
        choices = ", ".join(map(repr, OPERATORS))
        raise VersionError(f"Invalid operator type ({op}). Must be one of {choices}")
    key = KINDS[kind]
    try:
        return getattr(key(value), OPERATORS[op])(key(other))
    except VersionError as err:
        raise VersionError(f"Version comparison failed: {err}") from None
