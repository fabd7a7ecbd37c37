"""The progress display of `verify` and `rollout`: the tracker fed their events, the
batch above the totals, and verify's child telling the CLI as it goes."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from rich.console import Console

from pctfleet.cli import progress
from pctfleet.cli.rollout import _watch
from pctfleet.run.engine import RunOptions
from pctfleet.run.results import ContainerRun
from pctfleet.verify.events import Feed


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def plain(text) -> str:  # noqa: ANN001 - a rich Text
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    console.print(text)
    return console.file.getvalue()


def child_line(kind: str, container: str, **data: str) -> str:
    return json.dumps({"kind": kind, "container": container, **data}) + "\n"


# -- verify --------------------------------------------------------------------------------


def test_verify_events_show_the_check_in_progress_and_count_only_failures():
    clock = Clock()
    keys = ["pve0/200", "pve0/201", "pve1/200"]
    tracker = progress.Tracker([(k, k.split("/")[0], 1) for k in keys], clock=clock)
    feed = Feed(tracker)
    feed.line(child_line("task", "pve0/200", name="reading facts"))
    feed.line(child_line("task", "pve0/201", name="reading facts"))
    clock.now += 3
    feed.line(child_line("task", "pve0/200", name="test_links_resolve"))
    clock.now += 2
    feed.line(child_line("finish", "pve0/201", status="passed"))
    text = plain(progress.live_text(tracker.snapshot()))
    assert "containers: 1/3 done, 1 in flight, 1 waiting" in text
    assert "slowest: pve0/200 5s task 'test_links_resolve'" in text
    assert "passed" not in text  # a passing container is no problem
    feed.line(child_line("finish", "pve0/200", status="failed"))
    feed.line(child_line("finish", "pve1/200", status="ct-stopped"))
    total = progress.total_line(tracker.snapshot())
    assert total.startswith("containers: 3/3 done, 0 in flight, 0 waiting; 1 ct-stopped, 1 failed")


def test_verify_feed_counts_a_container_started_once_and_names_the_local_host():
    tracker = progress.Tracker([("local/0", "local", 1)])
    feed = Feed(tracker, {"local": "local/0"})
    for name in ("reading facts", "facts read, checks queued", "test_x", "test_y"):
        feed.line(child_line("task", "local", name=name))
    for stray in (
        "not json\n",
        "[1, 2]\n",
        '{"kind": "task"}\n',
        '{"container": 7, "kind": "x"}\n',
    ):
        feed.line(stray)  # a line that is not one of ours changes nothing, raises nothing
    snap = tracker.snapshot()
    assert snap.count(progress.RUNNING) == 1 and tracker.running == 1
    assert snap.slots[0].task == "test_y" and len(snap.slots) == 1


def test_verify_child_tells_each_check_and_the_end_as_it_runs(tmp_path):
    """`verify --local`'s child pytest, through the pipe: facts, the check, the verdict."""
    from pctfleet.inventory.local import local_inventory
    from pctfleet.run.observe import Observer
    from pctfleet.transport.options import ConnectOptions
    from pctfleet.verify.runner import VerifyRequest, run_verify

    heard: list[tuple] = []

    class Ear(Observer):
        def container_started(self, run):  # noqa: ANN001, ANN202
            heard.append(("start", run.key))

        def task_started(self, run, name):  # noqa: ANN001, ANN202
            heard.append(("task", run.key, name))

        def container_finished(self, run):  # noqa: ANN001, ANN202
            heard.append(("finish", run.key, run.status))

    inv = local_inventory()
    request = VerifyRequest(inv, list(inv.containers), ConnectOptions(), keyword="links")
    extra = {"venv": str(tmp_path / "no-venv")}  # links cannot resolve there: a failure
    request.extra_vars = extra
    result = run_verify(request, Ear())
    (row,) = result.containers
    assert heard[0] == ("start", row.container)
    assert ("task", row.container, "reading facts") in heard
    assert ("task", row.container, "test_links_resolve") in heard
    assert heard[-1] == ("finish", row.container, row.status) and row.status == "failed"


# -- rollout -------------------------------------------------------------------------------


def rollout_of(keys: list[str], gate=None, warnings=()):  # noqa: ANN001, ANN201
    containers = [SimpleNamespace(key=k, node=SimpleNamespace(name=k.split("/")[0])) for k in keys]
    plan = SimpleNamespace(options=RunOptions())
    rollout = SimpleNamespace(plan=plan, on_event=lambda event: None, gate=gate)
    return rollout, SimpleNamespace(plays=[("play", containers)], warnings=list(warnings))


def test_rollout_prints_the_playbooks_warnings_once_it_is_loaded():
    warning = "book.yml:3: play 'p': vars file '[x]' not found in /b/vars or /b: skipped"
    rollout, prepared = rollout_of(["pve0/200"], warnings=[warning])
    console = Console(file=io.StringIO(), width=300)
    _watch(rollout, console, as_json=True)
    rollout.on_prepared(prepared)
    assert console.file.getvalue() == f"warning: {warning}\n"  # as written: no markup


def test_rollout_panel_shows_the_batch_its_gate_and_the_fleet_per_node():
    keys = ["pve0/200", "pve0/201", "pve1/200", "pve1/201"]
    gated: list[list] = []
    rollout, prepared = rollout_of(keys, gate=lambda cs: gated.append(cs) or {})
    console = Console(file=io.StringIO(), width=120)
    display = _watch(rollout, console, as_json=False)
    rollout.on_prepared(prepared)
    assert rollout.plan.options.observer is display.tracker
    rollout.on_event({"kind": "batch-start", "batch": 1, "of": 3, "containers": keys[:1]})
    display.tracker.container_started(ContainerRun("pve0", 200))
    display.tracker.container_finished(ContainerRun("pve0", 200, status="ok"))
    rollout.on_event({"kind": "batch-start", "batch": 2, "of": 3, "containers": keys[1:3]})
    display.tracker.container_started(ContainerRun("pve0", 201))
    text = plain(progress.live_text(display.tracker.snapshot(), title=display.title()))
    assert text.startswith("batch 2/3, 2 container(s)\n")
    assert "containers: 1/4 done, 1 in flight, 2 waiting" in text
    assert "pve0: 1 done, 1 in flight, 0 waiting" in text
    rollout.gate(keys[1:3])
    assert gated == [keys[1:3]]  # the real gate still judges
    assert display.title() == "batch 2/3, health gate on 2 container(s)"


def test_rollout_plain_lines_carry_the_batch_and_no_control_codes():
    import time

    rollout, prepared = rollout_of(["pve0/200", "pve0/201"])
    console = Console(file=io.StringIO(), width=120)
    display = _watch(rollout, console, as_json=True)  # --json: plain lines on stderr
    assert rollout.gate is None and not display.live
    display.every = 0.05
    with display:
        rollout.on_prepared(prepared)
        rollout.on_event({"kind": "batch-start", "batch": 1, "of": 2, "containers": ["pve0/200"]})
        time.sleep(0.3)
    out = console.file.getvalue()
    assert "batch 1/2, 1 container(s): containers: 0/2 done, 0 in flight, 2 waiting" in out
    assert "\x1b" not in out
