"""Fixtures of the fleet checks: settings per host, every fact read once per container.

Facts are read for all selected hosts at once (`--pct-forks` at a time) when
the first check starts, so a fleet takes about as long as its slowest
container; each check then only judges what was read.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from pctfleet.infra import Gathered, gather
from pctfleet.verify import SETTINGS, events
from pctfleet.verify import backend as pct_backend  # makes pct:// known, with or without the plugin


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pctfleet", "pctfleet fleet checks")
    for name, default in SETTINGS.items():
        group.addoption(
            f"--pct-{name.replace('_', '-')}",
            dest=f"pct_{name}",
            default=None,
            help=f"{name} of every host, unless its pct:// URL sets it "
            f"[default: ${env_name(name)}, else {default}]",
        )
    group.addoption(
        "--pct-forks", type=int, default=10, help="Containers whose facts are read at once."
    )


def pytest_configure(config: pytest.Config) -> None:
    # Without the installed entry point (a bare checkout), load the backend's hooks here.
    if not config.pluginmanager.is_registered(pct_backend):
        config.pluginmanager.register(pct_backend, "pctfleet-pct")


def env_name(name: str) -> str:
    return f"PCTFLEET_{name.upper()}"


def settings_for(config: pytest.Config, host: Any) -> dict[str, str]:
    """The host's URL first, then --pct-NAME, then $PCTFLEET_NAME, then site.yml's default."""
    from_url = getattr(host.backend, "settings", {})
    return {
        name: str(
            from_url.get(name)
            or config.getoption(f"pct_{name}")
            or os.environ.get(env_name(name))
            or default
        )
        for name, default in SETTINGS.items()
    }


class Gatherer:
    """One fact read per (host, settings), started at most `forks` at a time."""

    def __init__(self, forks: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, forks), thread_name_prefix="facts")
        self._futures: dict[tuple, Future[Gathered]] = {}
        self._lock = threading.Lock()

    def submit(self, host: Any, settings: dict[str, str]) -> Future[Gathered]:
        key = (id(host), tuple(sorted(settings.items())))
        with self._lock:
            if key not in self._futures:
                self._futures[key] = self._pool.submit(_gather, host, settings)
            return self._futures[key]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _gather(host: Any, settings: dict[str, str]) -> Gathered:
    """`gather`, with `pctfleet verify`'s progress told when it begins and ends."""
    container = events.container_of(host)
    events.emit("task", container, name="reading facts")
    try:
        return gather(host, settings)
    finally:
        events.emit("task", container, name="facts read, checks queued")


def _host_of(item: pytest.Item) -> Any:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("_testinfra_host") if callspec else None


@pytest.fixture(scope="session")
def _pctfleet_gatherer(pytestconfig: pytest.Config) -> Iterator[Gatherer]:
    gatherer = Gatherer(pytestconfig.getoption("pct_forks"))
    yield gatherer
    gatherer.close()


@pytest.fixture(scope="session", autouse=True)
def _pctfleet_prefetch(request: pytest.FixtureRequest, _pctfleet_gatherer: Gatherer) -> None:
    """Start reading every selected host's facts now, in parallel."""
    for item in request.session.items:
        host = _host_of(item)
        if host is not None and "facts" in getattr(item, "fixturenames", ()):
            _pctfleet_gatherer.submit(host, settings_for(request.config, host))


@pytest.fixture(scope="module")
def settings(host: Any, pytestconfig: pytest.Config) -> dict[str, str]:
    return settings_for(pytestconfig, host)


@pytest.fixture(scope="module")
def facts(host: Any, settings: dict[str, str], _pctfleet_gatherer: Gatherer) -> Gathered:
    """Everything the checks judge, read in one call to the host."""
    return _pctfleet_gatherer.submit(host, settings).result()


@pytest.fixture(autouse=True)
def _pctfleet_timing(request: pytest.FixtureRequest) -> None:
    if "facts" in request.fixturenames:
        seconds = request.getfixturevalue("facts").seconds
        request.node.user_properties.append(("gather_seconds", round(seconds, 3)))


@pytest.fixture
def note(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Record what a check saw, passed or not: `pctfleet verify --json` shows it."""

    def add(message: str) -> None:
        request.node.user_properties.append(("message", message))

    return add
