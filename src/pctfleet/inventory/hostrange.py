"""Host ranges, as ansible-core expands them in YAML and INI inventories:
`gpu-[01:04]` is gpu-01 ... gpu-04 (the width of a zero-padded start kept),
`node[a:c]` node a, b and c, `[1:9:2]` every second, several ranges multiply."""

from __future__ import annotations

import string

from pctfleet.errors import InventoryError

MAX_HOSTS = 10_000


def expand_hosts(pattern: str, where: str) -> list[str]:
    """The host names `pattern` stands for (itself when it holds no range); more than
    MAX_HOSTS names is an error, found before any is made."""
    parts = _parts(pattern, where)
    total = 1
    for part in parts:
        total *= len(part) if not isinstance(part, str) else 1
    if total > MAX_HOSTS:
        raise InventoryError(
            f"host range {pattern!r} names more than {MAX_HOSTS} hosts", where=where
        )
    names = [""]
    for part in parts:
        names = [
            name + piece for name in names for piece in ([part] if isinstance(part, str) else part)
        ]
    return names


def _parts(pattern: str, where: str) -> list:
    """Text and ranges, in order: `gpu-[1:2]x` -> ['gpu-', <1, 2>, 'x']."""
    parts: list = []
    rest = pattern
    while "[" in rest:
        head, _, rest = rest.partition("[")
        inner, closed, rest = rest.partition("]")
        bounds = inner.split(":")
        if not closed or len(bounds) not in (2, 3):
            raise InventoryError(
                f"host range in {pattern!r} must be [begin:end] or [begin:end:step]", where=where
            )
        begin, end = bounds[0] or "0", bounds[1]
        if not end:
            raise InventoryError(f"host range in {pattern!r} must give its end", where=where)
        parts += [head, _items(pattern, begin, end, bounds[2:], where)]
    return [*parts, rest]


class _Padded:
    """range() as zero-padded text, its length known without making the names."""

    def __init__(self, numbers: range, width: int) -> None:
        self.numbers, self.width = numbers, width

    def __len__(self) -> int:
        return len(self.numbers)

    def __iter__(self):  # noqa: ANN204
        return (str(n).zfill(self.width) for n in self.numbers)


def _items(pattern: str, begin: str, end: str, step: list[str], where: str):  # noqa: ANN202
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
        return _Padded(range(int(begin), int(end) + 1, stride), width)
    except ValueError:
        raise InventoryError(
            f"host range {pattern!r} is not numbers or letters", where=where
        ) from None
