"""Network round trips cost a node a few RTTs (login, channel, call), not one per container."""

from __future__ import annotations

import time
from pathlib import Path

from pctfleet.inventory import load_inventory
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, execute, prepare
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.sim import SimNode, SimTarget, build_sim_fleet, converged_answers
from tests.unit.test_per_node import PLAYBOOK

RTT = 0.1
INVENTORY = "nodes:\n" + "".join(
    f"  pve{n}: {{containers: [{ct}]}}\n"
    for n in range(1, 5)
    for ct in ["200, 201, 202, 203, 204, 205"]
)


def _noop_wall(tmp_path: Path, rtt: float) -> tuple[float, dict]:
    (tmp_path / "site.yml").write_text(PLAYBOOK)
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    inventory = load_inventory(tmp_path / "inventory.yml")
    containers = list(inventory.select("all"))
    request = RunRequest(
        tmp_path / "site.yml", inventory, containers, ConnectOptions(), RunOptions()
    )
    prepared = prepare(request)
    fleets = []

    def factory(members, connect):  # noqa: ANN001, ANN202, ARG001
        answers = lambda c: converged_answers(prepared, c)  # noqa: E731
        fleets.append(build_sim_fleet(members, latency=0.05, answers=answers, rtt=rtt))
        return fleets[-1]

    started = time.monotonic()
    runs = execute(prepared, fleet_factory=factory)
    assert all(run.status == "ok" for run in runs)
    return time.monotonic() - started, fleets[0].connections_opened()


def test_round_trips_add_at_most_three_per_node_with_default_options(tmp_path):
    base, _ = _noop_wall(tmp_path, 0.0)
    slow, logins = _noop_wall(tmp_path, RTT)
    # 4 nodes x 6 containers: one per container in a row would add 24 RTTs or more.
    assert slow - base <= 3 * RTT + 0.1
    assert logins == {f"pve{n}": 1 for n in range(1, 5)}


def test_a_node_logs_in_once_and_each_call_pays_a_channel_and_its_round_trip():
    node = SimNode("pve1", rtt=0.05)
    target = SimTarget(node, 200, latency=0.0)
    started = time.monotonic()
    target.run(["true"])
    first = time.monotonic() - started
    target.run(["true"])
    second = time.monotonic() - started - first
    assert 0.15 <= first < 0.25 and 0.1 <= second < 0.15
    assert node.logins == 1
