"""Batch planning for rollouts, with Ansible's `serial` semantics.

>>> [len(b) for b in plan_batches(list(range(10)), ["1", "50%"])]
[1, 5, 4]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import zip_longest
from typing import TypeVar

from pctfleet.errors import InputError

T = TypeVar("T")


def parse_serial(text: str | None) -> list[str]:
    """`1,25%,100%` -> ['1', '25%', '100%']; each a positive int or a percentage."""
    if not text:
        return ["100%"]
    # ASCII only: Python's strip() and isdigit() would take "9\xa0" or "²" for numbers.
    items = [item.strip(" \t") for item in text.split(",")]
    for item in items:
        number = item[:-1] if item.endswith("%") else item
        if (
            not (number.isascii() and number.isdigit())
            or int(number) < 1
            or (item.endswith("%") and int(number) > 100)
        ):
            raise InputError(
                f"--serial: {item!r} is not a count (1, 2, ...) or a percentage (1%..100%)"
            )
    return items


def batch_size(item: str, total: int) -> int:
    """Ansible: a percentage of all hosts, rounded down, but never less than one."""
    if item.endswith("%"):
        return max(1, math.floor(total * int(item[:-1]) / 100))
    return int(item)


def plan_batches(items: Sequence[T], serial: Sequence[str]) -> list[list[T]]:
    """Split `items` in order; the last serial value repeats until all are placed."""
    batches, index, step = [], 0, 0
    while index < len(items):
        size = batch_size(serial[min(step, len(serial) - 1)], len(items))
        batches.append(list(items[index : index + size]))
        index += size
        step += 1
    return batches


def order_containers(containers: Sequence[T], order: str) -> list[T]:
    """`node`: node by node; `spread`: round-robin across nodes, so batches mix nodes."""
    by_node: dict[str, list[T]] = {}
    for container in containers:
        by_node.setdefault(container.node.name, []).append(container)
    if order == "node":
        return [c for node in by_node.values() for c in node]
    if order != "spread":
        raise InputError(f"--order: {order!r} must be 'spread' or 'node'")
    return [c for row in zip_longest(*by_node.values()) for c in row if c is not None]
