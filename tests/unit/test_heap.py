"""Fewer garbage collections while a run builds and keeps a fleet's objects."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pctfleet import heap
from pctfleet.heap import YOUNG, fewer_collections
from pctfleet.inventory import load
from pctfleet.run import playbookrun
from pctfleet.run.engine import RunOptions
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.sim import build_sim_fleet

PLAYBOOK = """
- hosts: all
  tasks:
    - name: link
      file: {src: /opt/app, dest: /srv/app, state: link}
"""

INVENTORY = "nodes:\n  pve1:\n    containers: [200, 201]\n"


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_inside_the_youngest_generation_waits_longer_and_the_setting_comes_back(thresholds):
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG, 10, 10)
        with fewer_collections():  # nested (or another thread): one setting
            assert gc.get_threshold() == (YOUNG, 10, 10)
        assert gc.get_threshold() == (YOUNG, 10, 10)  # still inside the outer one
    assert gc.get_threshold() == (700, 10, 10)
    assert heap._users == 0


def test_a_higher_threshold_or_collection_turned_off_is_left_alone(thresholds):
    gc.set_threshold(YOUNG * 2, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG * 2, 5, 5)
    gc.set_threshold(0, 10, 10)
    with fewer_collections():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold() == (0, 10, 10)


def test_the_setting_comes_back_after_an_error(thresholds):
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_loading_preflight_and_the_run_happen_with_fewer_collections(
    tmp_path: Path, thresholds, monkeypatch
):
    seen: dict[str, int] = {}

    def spy(name, func):  # noqa: ANN001, ANN202
        def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            seen[name] = gc.get_threshold()[0]
            return func(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(load, "inventory_from_data", spy("inventory", load.inventory_from_data))
    monkeypatch.setattr(playbookrun, "load_playbook", spy("prepare", playbookrun.load_playbook))
    fleet = spy("execute", lambda cts, connect: build_sim_fleet(cts, latency=0.0))
    (tmp_path / "inv.yml").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    inventory = load.load_inventory(tmp_path / "inv.yml")
    containers = list(inventory.select("all"))
    request = playbookrun.RunRequest(
        tmp_path / "play.yml", inventory, containers, ConnectOptions(), RunOptions()
    )
    runs = playbookrun.execute(playbookrun.prepare(request), fleet_factory=fleet)
    assert [run.status for run in runs] == ["changed", "changed"]
    assert seen == {"inventory": YOUNG, "prepare": YOUNG, "execute": YOUNG}
    assert gc.get_threshold() == (700, 10, 10)
