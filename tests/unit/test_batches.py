"""Rollout batch planning: Ansible's serial semantics, orders, bad values."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pctfleet.errors import InputError
from pctfleet.run.batches import order_containers, parse_serial, plan_batches


@dataclass(frozen=True)
class Node:
    name: str


@dataclass(frozen=True)
class Ct:
    node: Node
    ctid: int


@pytest.mark.parametrize(
    "serial, total, sizes",
    [
        ("1,50%", 9, [1, 4, 4]),
        ("1,25%", 9, [1, 2, 2, 2, 2]),
        ("1,25%,100%", 9, [1, 2, 6]),
        ("2", 5, [2, 2, 1]),
        ("10%", 3, [1, 1, 1]),  # a batch has at least one container
        ("100%", 4, [4]),
        (None, 4, [4]),
    ],
)
def test_batch_sizes_follow_ansible(serial, total, sizes):
    batches = plan_batches(list(range(total)), parse_serial(serial))
    assert [len(b) for b in batches] == sizes
    assert [x for b in batches for x in b] == list(range(total))


@pytest.mark.parametrize("bad", ["0", "-1", "x", "101%", "1,,2", "1.5", "9\xa0", "²", "٣%"])
def test_bad_serial_is_one_line_error(bad):
    with pytest.raises(InputError, match="--serial"):
        parse_serial(bad)


def fleet() -> list[Ct]:
    return [Ct(Node(f"n{n}"), 200 + i) for n in (1, 2, 3) for i in range(3)]


def test_spread_order_mixes_nodes_and_node_order_keeps_them_together():
    spread = order_containers(fleet(), "spread")
    assert [c.node.name for c in spread[:3]] == ["n1", "n2", "n3"]
    by_node = order_containers(fleet(), "node")
    assert [c.node.name for c in by_node[:3]] == ["n1", "n1", "n1"]
    assert set(spread) == set(by_node) and len(spread) == 9
    with pytest.raises(InputError, match="--order"):
        order_containers(fleet(), "random")
