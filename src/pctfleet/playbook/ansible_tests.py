"""ansible-core's own Jinja tests that plain Jinja lacks: truthiness, set relations,
the other names of the result tests, and the path tests (which, as in Ansible,
look at the controller's file system, not the container's)."""

from __future__ import annotations

import math
import os.path
from collections.abc import Callable, Mapping
from typing import Any

import jinja2

_TRUE = frozenset({"y", "yes", "on", "1", "true", "t"})
_FALSE = frozenset({"n", "no", "off", "0", "false", "f"})


def _as_bool(value: Any) -> Any:
    """Ansible's boolean() for `convert_bool`: a word it knows, else the value itself."""
    key = value.strip().lower() if isinstance(value, str) else value
    if isinstance(key, str):
        return True if key in _TRUE else False if key in _FALSE else value
    if isinstance(key, bool | int | float) and key in (0, 1):
        return bool(key)
    return value


def truthy(value: Any, convert_bool: bool = False) -> bool:
    return bool(_as_bool(value) if convert_bool else value)


def falsy(value: Any, convert_bool: bool = False) -> bool:
    return not truthy(value, convert_bool)


def _result(name: str) -> Callable[[Any], bool]:
    def test(result: Any) -> bool:
        if not isinstance(result, Mapping):
            raise TypeError(f"The '{name}' test expects a dictionary")
        return bool(result.get("unreachable"))

    return test


def _contains(seq: Any, value: Any) -> bool:
    """`value in seq`; a list's undefined item is an error even after a match, as
    ansible-core's lazy list renders every item first (measured on 2.19)."""
    if isinstance(seq, list | tuple):
        for item in seq:
            if isinstance(item, jinja2.Undefined):
                item._fail_with_undefined_error()
    return value in seq


def _nan(value: Any) -> bool:
    try:
        return math.isnan(value)
    except TypeError:
        return False


TESTS: dict[str, Callable[..., bool]] = {
    "truthy": truthy,
    "falsy": falsy,
    "contains": _contains,
    "any": lambda seq: any(seq),
    "all": lambda seq: all(seq),
    "subset": lambda a, b: set(a) <= set(b),
    "issubset": lambda a, b: set(a) <= set(b),
    "superset": lambda a, b: set(a) >= set(b),
    "issuperset": lambda a, b: set(a) >= set(b),
    "unreachable": _result("unreachable"),
    "reachable": lambda result: not _result("reachable")(result),
    "nan": _nan,
    "isnan": _nan,
    "exists": os.path.exists,
    "link_exists": os.path.lexists,
    "file": os.path.isfile,
    "is_file": os.path.isfile,
    "directory": os.path.isdir,
    "is_dir": os.path.isdir,
    "link": os.path.islink,
    "is_link": os.path.islink,
    "abs": os.path.isabs,
    "is_abs": os.path.isabs,
    "same_file": os.path.samefile,
    "is_same_file": os.path.samefile,
    "mount": os.path.ismount,
    "is_mount": os.path.ismount,
}
# Other names ansible-core gives the result tests templating.py defines.
ALIASES = {"change": "changed", "failure": "failed", "successful": "succeeded", "skip": "skipped"}
