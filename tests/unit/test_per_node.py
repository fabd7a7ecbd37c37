"""--per-node: at most N containers of one node in flight, while other nodes proceed."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from pctfleet.inventory import load_inventory
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, execute, prepare, schedule
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.sim import build_sim_fleet, converged_answers

PLAYBOOK = """
- hosts: all
  tasks:
    - name: guarded
      command: touch /tmp/x creates=/tmp/x
"""

INVENTORY = """
defaults: {user: root}
nodes:
  pve1: {containers: [200, 201, 202]}
  pve2: {containers: [200, 201, 202]}
"""


class Tracker:
    """Counts containers in flight, per node and in all, and the peaks of both."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.peak_all = 0

    def one(self, container: SimpleNamespace) -> None:
        node = container.node.name
        with self.lock:
            self.now[node] += 1
            self.peak[node] = max(self.peak[node], self.now[node])
            self.peak_all = max(self.peak_all, sum(self.now.values()))
        time.sleep(self.seconds)
        with self.lock:
            self.now[node] -= 1


def fake_containers(layout: dict[str, int]) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(node=SimpleNamespace(name=node), ctid=200 + i)
        for node, count in layout.items()
        for i in range(count)
    ]


@pytest.mark.parametrize(("per_node", "forks"), [(1, 2), (1, 10), (2, 10), (2, 3)])
def test_schedule_keeps_each_node_at_its_limit_and_runs_nodes_side_by_side(per_node, forks):
    tracker = Tracker(0.05)
    schedule(fake_containers({"a": 4, "b": 4}), tracker.one, forks, per_node, threading.Event())
    assert tracker.peak == {"a": per_node, "b": per_node}
    # Containers of node a come first: a worker must not sit waiting on a's limit.
    assert tracker.peak_all == min(forks, 2 * per_node)


def test_schedule_without_a_limit_fills_every_fork():
    tracker = Tracker(0.05)
    schedule(fake_containers({"a": 6}), tracker.one, 4, None, threading.Event())
    assert tracker.peak_all == 4


def _run(tmp_path: Path, per_node: int | None, forks: int) -> list:
    (tmp_path / "site.yml").write_text(PLAYBOOK)
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    inventory = load_inventory(tmp_path / "inventory.yml")
    containers = list(inventory.select("all"))
    request = RunRequest(
        tmp_path / "site.yml", inventory, containers, ConnectOptions(), RunOptions(), forks
    )
    request.per_node = per_node
    prepared = prepare(request)

    def factory(members, connect):  # noqa: ANN001, ANN202, ARG001
        answers = lambda c: converged_answers(prepared, c)  # noqa: E731
        return build_sim_fleet(members, latency=0.1, answers=answers)

    return execute(prepared, fleet_factory=factory)


def test_a_run_with_per_node_one_never_overlaps_a_node_and_records_real_times(tmp_path):
    before = time.time()
    runs = _run(tmp_path, per_node=1, forks=2)
    spans = defaultdict(list)
    for run in runs:
        assert before <= run.started_at <= run.finished_at <= time.time(), run.as_json()
        spans[run.node].append((run.started_at, run.finished_at))
    for node, intervals in spans.items():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
            assert start >= end, f"{node}: two containers in flight at once"
    assert any(a0 < b1 and b0 < a1 for a0, a1 in spans["pve1"] for b0, b1 in spans["pve2"]), (
        "the nodes never ran side by side"
    )


def test_a_run_without_per_node_overlaps_a_node(tmp_path):
    runs = [r for r in _run(tmp_path, per_node=None, forks=6) if r.node == "pve1"]
    assert max(r.started_at for r in runs) < min(r.finished_at for r in runs)
