"""Scheduling: nodes side by side, each within its channel limit, --forks as a global cap."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from types import SimpleNamespace

import paramiko
import pytest

from pctfleet.errors import InventoryError
from pctfleet.inventory import load_inventory
from pctfleet.run.scheduler import MAX_WORKERS, schedule, worker_count
from pctfleet.transport import ssh
from pctfleet.transport.connections import container_limit, node_options
from pctfleet.transport.options import ConnectOptions
from tests.unit.test_per_node import Tracker, fake_containers


def test_a_blocked_node_never_holds_up_another_node():
    release = threading.Event()
    finished: list[str] = []

    def one(container: SimpleNamespace) -> None:
        if container.node.name == "a":
            assert release.wait(5)
        finished.append(container.node.name)
        if finished.count("b") == 12:
            release.set()  # only reached if b ran while a's containers were stuck

    started = time.monotonic()
    schedule(fake_containers({"a": 12, "b": 12}), one, None, None, threading.Event())
    assert time.monotonic() - started < 4
    assert finished[:12] == ["b"] * 12


def test_each_node_stays_within_its_limit_and_nodes_overlap():
    tracker = Tracker(0.2)
    limits = {"a": 2, "b": 3}
    containers = fake_containers({"a": 6, "b": 6})
    schedule(containers, tracker.one, None, None, threading.Event(), lambda c: limits[c.node.name])
    assert dict(tracker.peak) == limits
    assert tracker.peak_all == 5


def test_forks_caps_the_whole_fleet():
    tracker = Tracker(0.2)
    schedule(fake_containers({"a": 4, "b": 4, "c": 4}), tracker.one, 3, None, threading.Event())
    assert tracker.peak_all == 3


def test_without_forks_every_node_runs_up_to_its_limit():
    tracker = Tracker(0.3)
    schedule(fake_containers({n: 12 for n in "abcd"}), tracker.one, None, None, threading.Event())
    assert tracker.peak == dict.fromkeys("abcd", 10)
    assert tracker.peak_all == 40


@pytest.mark.parametrize(
    ("layout", "longer"), [({"a": 6}, False), (dict.fromkeys("abcd", 10), True)]
)
def test_many_workers_run_with_longer_gil_slices_and_the_default_comes_back(layout, longer):
    import sys

    seen = []
    default = sys.getswitchinterval()
    schedule(
        fake_containers(layout), lambda c: seen.append(sys.getswitchinterval()), None, None,
        threading.Event(),
    )  # fmt: skip
    assert len(seen) == sum(layout.values())
    wanted = max(default, 0.05) if longer else default
    assert seen == pytest.approx([wanted] * len(seen))  # CPython keeps it in microseconds
    assert sys.getswitchinterval() == default


def test_worker_threads_are_bounded_for_a_large_fleet():
    containers = fake_containers({f"n{i}": 20 for i in range(500)})
    assert worker_count(containers, None, lambda c: 10) == MAX_WORKERS
    assert worker_count(containers[:6], None, lambda c: 10) == 6
    assert worker_count(containers, 7, lambda c: 10) == 7


class FakeServer:
    """sshd with MaxSessions `cap`: a channel past it is refused (OpenSSH: code 2)."""

    def __init__(self, cap: int, code: int = 2, text: str = "Connect failed") -> None:
        self.cap, self.open, self.peak, self.refused = cap, 0, 0, 0
        self.code, self.text = code, text
        self.lock = threading.Lock()
        self.logins = 0

    def open_session(self, timeout: float | None = None) -> SimpleNamespace:
        with self.lock:
            if self.open >= self.cap:
                self.refused += 1
                if not self.code:  # a refusal whose saved exception another caller took
                    raise paramiko.SSHException(self.text)
                if not self.code:  # a refusal whose saved exception another caller took
                    raise paramiko.SSHException(self.text)
                raise paramiko.ChannelException(self.code, self.text)
            self.open += 1
            self.peak = max(self.peak, self.open)
        return SimpleNamespace(server=self)

    def connection(self) -> SimpleNamespace:
        self.logins += 1
        client = SimpleNamespace(get_transport=lambda: SimpleNamespace(is_active=lambda: True))
        return SimpleNamespace(transport=self, client=client, close=lambda: None)


def fake_pump(channel, command, stdin, limit, stdout, stderr, node) -> int:  # noqa: ANN001, ARG001
    time.sleep(0.1)
    with channel.server.lock:
        channel.server.open -= 1
    return 0


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    server = FakeServer(cap=2)
    monkeypatch.setattr(ssh, "pump_channel", fake_pump)
    monkeypatch.setattr(ssh.NodeConnection, "_connect", lambda self: server.connection())
    return server


@pytest.mark.parametrize(
    ("code", "text"),
    [(1, "Administratively prohibited"), (2, "Connect failed"), (0, "Unable to open channel.")],
)
def test_a_refused_channel_lowers_the_node_limit_and_the_call_still_succeeds(refusing, code, text):
    refusing.code, refusing.text = code, text
    node = ssh.NodeConnection("pve1", "127.0.0.1", ConnectOptions(max_sessions=10))
    codes: list[int] = []

    def call() -> None:
        codes.append(node.exec("true", stdin=None, timeout=5, stdout=None, stderr=None)[0])

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes == [0] * 6
    assert refusing.refused >= 1
    assert node.max_sessions == 2
    assert refusing.logins == 1
    assert refusing.peak == 2


def test_a_channel_refused_with_nothing_else_open_fails_the_call(refusing):
    refusing.cap = 0
    node = ssh.NodeConnection("pve1", "127.0.0.1", ConnectOptions())
    with pytest.raises(ssh.NodeUnreachable, match="Connect failed"):
        node.exec("true", stdin=None, timeout=5, stdout=None, stderr=None)


NATIVE = """
nodes:
  pve1: {max_sessions: 3, containers: [200, 201]}
  pve2: {containers: [200]}
"""

ANSIBLE = """
all:
  hosts:
    ct200: {ansible_host: 127.0.0.1, proxmox_vmid: 200, pctfleet_max_sessions: 4}
"""


def test_the_inventory_sets_a_node_limit(tmp_path):
    (tmp_path / "native.yml").write_text(NATIVE)
    (tmp_path / "ansible.yml").write_text(ANSIBLE)
    native = list(load_inventory(tmp_path / "native.yml").select("all"))
    assert [container_limit(c) for c in native] == [3, 3, 10]
    assert node_options(native[0].node, ConnectOptions()).max_sessions == 3
    ansible = list(load_inventory(tmp_path / "ansible.yml").select("all"))
    assert [container_limit(c) for c in ansible] == [4]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("native.yml", NATIVE.replace("3,", "0,"), "'max_sessions' must be an integer >= 1, got 0"),
        ("ansible.yml", ANSIBLE.replace(": 4", ": x"), "pctfleet_max_sessions must be an integer"),
    ],
)
def test_a_bad_node_limit_is_one_line_naming_it(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(InventoryError, match=message) as caught:
        load_inventory(tmp_path / name)
    assert "\n" not in str(caught.value)


class _NeverRuns:
    """A pool whose work never starts, as when an interrupt comes right after submit."""

    def __init__(self, max_workers: int) -> None:  # noqa: ARG002
        pass

    def __enter__(self):  # noqa: ANN204
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, fn, *args):  # noqa: ANN001, ANN202, ARG002
        return Future()


class _Interrupted:
    """A queue of finished work that answers with Ctrl-C."""

    def __class_getitem__(cls, item):  # noqa: ANN001, ANN206
        return cls

    def put(self, item) -> None:  # noqa: ANN001
        pass

    def get(self):  # noqa: ANN201
        raise KeyboardInterrupt


def test_an_interrupt_tells_which_started_containers_never_ran(monkeypatch):
    import pctfleet.run.scheduler as scheduler

    monkeypatch.setattr(scheduler, "ThreadPoolExecutor", _NeverRuns)
    monkeypatch.setattr(scheduler.queue, "SimpleQueue", _Interrupted)
    started, cancelled = [], []
    stop = threading.Event()
    items = [SimpleNamespace(node=SimpleNamespace(name="n1"), ctid=c) for c in (200, 201)]
    hooks = {"starting": started.append, "cancelled": cancelled.append}
    with pytest.raises(KeyboardInterrupt):
        schedule(items, print, None, None, stop, **hooks)
    assert cancelled == started == items and stop.is_set()


def test_an_interrupt_before_a_started_container_is_submitted_cancels_it(monkeypatch):
    import pctfleet.run.scheduler as scheduler

    monkeypatch.setattr(scheduler, "ThreadPoolExecutor", _NeverRuns)
    started, cancelled, submitted = [], [], []

    def starting(container) -> None:  # noqa: ANN001
        started.append(container)
        if len(started) == 2:
            raise KeyboardInterrupt  # lands after both were announced, before any submit

    items = [SimpleNamespace(node=SimpleNamespace(name="n1"), ctid=c) for c in (200, 201)]
    stop = threading.Event()
    with pytest.raises(KeyboardInterrupt):
        schedule(
            items, submitted.append, None, None, stop, starting=starting, cancelled=cancelled.append
        )
    assert cancelled == started == items and submitted == [] and stop.is_set()
