"""Host ranges, as ansible-core expands them in YAML and INI inventories:
`gpu-[01:04]` is gpu-01 ... gpu-04 (the width of a zero-padded start kept),
`node[a:c]` node a, b and c, `[1:9:2]` every second, several ranges multiply."""

from __future__ import annotations

import string

from pctfleet.errors import InventoryError

MAX_HOSTS = 10_000


def expand_hosts(pattern: str, where: str) -> list[str]:
    """The host names `pattern` stands for (itself when it holds no range)."""
    if "[" not in pattern:
        return [pattern]
    head, _, rest = pattern.partition("[")
    inner, closed, tail = rest.partition("]")
    bounds = inner.split(":")
    if not closed or len(bounds) not in (2, 3):
        raise InventoryError(
            f"host range in {pattern!r} must be [begin:end] or [begin:end:step]", where=where
        )
    begin, end = bounds[0] or "0", bounds[1]
    if not end:
        raise InventoryError(f"host range in {pattern!r} must give its end", where=where)
    names = [head + item + tail for item in _items(pattern, begin, end, bounds[2:], where)]
    if len(names) > MAX_HOSTS:
        raise InventoryError(
            f"host range {pattern!r} names more than {MAX_HOSTS} hosts", where=where
        )
    return [host for name in names for host in expand_hosts(name, where)]


def _items(pattern: str, begin: str, end: str, step: list[str], where: str) -> list[str]:
    try:
        stride = int(step[0]) if step else 1
        if begin in string.ascii_letters and end in string.ascii_letters:
            first, last = string.ascii_letters.index(begin), string.ascii_letters.index(end)
            if first > last:
                raise InventoryError(f"host range {pattern!r} must have begin <= end", where=where)
            return list(string.ascii_letters[first : last + 1 : stride])
        width = len(begin) if begin.startswith("0") and len(begin) > 1 else 0
        if width and width != len(end):
            raise InventoryError(
                f"host range {pattern!r} must give begin and end in the same width", where=where
            )
        return [str(n).zfill(width) for n in range(int(begin), int(end) + 1, stride)]
    except ValueError:
        raise InventoryError(
            f"host range {pattern!r} is not numbers or letters", where=where
        ) from None
