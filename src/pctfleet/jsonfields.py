"""How a result object becomes its JSON mapping: its fields, named once, in the contract's order."""

from __future__ import annotations

import dataclasses
from typing import Any


def json_fields(obj: object, names: str, *, digits: int | None = None, **values: Any) -> dict:
    """`{name: value}` for each space-separated name in `names`, in that order.

    A value given by keyword stands for a field that is computed or renamed; any
    other is read from the attribute, a float rounded to `digits` when given.
    Nested results become their own JSON (see `plain`).
    """
    data = {}
    for name in names.split():
        if name in values:
            data[name] = plain(values[name])
            continue
        value = getattr(obj, name)
        if digits is not None and isinstance(value, float):
            value = round(value, digits)
        data[name] = plain(value)
    return data


def plain(value: Any) -> Any:
    """A nested result as JSON data: its `as_json()`, a dataclass's fields, a list item by item."""
    if isinstance(value, list):
        return [plain(item) for item in value]
    if hasattr(value, "as_json"):
        return value.as_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
