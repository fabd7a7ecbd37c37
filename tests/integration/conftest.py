"""Fixtures for tests that need the local lab (root, sshd, LXC)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import pytest

from pctfleet.lab import Lab


@pytest.hookimpl(optionalhook=True)  # known only where pytest-xdist is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With pytest-xdist's --dist loadscope: every test of this folder is one unit of
    work, so one worker runs them one at a time (they share the one lab: its containers,
    nodes and ports) while the other workers run the unit tests, a module at a time.
    (xdist's loadgroup does not group under pytest 9: it rewrites a node id pytest 9
    no longer reads.)"""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LabApart(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/integration/"):
                return "tests/integration"
            return super()._split_scope(nodeid)

    return LabApart(config, log)


def _lab_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "the lab needs root"
    for tool in ("sshd", "lxc-start", "debootstrap", "unshare"):
        if shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
            return f"{tool} missing: apt-get install -y openssh-server lxc debootstrap"
    return None


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """The shared lab (2 nodes x 2 containers), brought up once per session.

    It is left running afterwards on purpose: the next run's `up` is then a
    sub-second no-op. `pctfleet lab down` removes it.
    """
    reason = _lab_unavailable()
    if reason:
        pytest.skip(reason)
    shared = Lab()
    shared.up(nodes=2, containers=2)
    yield shared


# The shared lab's extra containers on node1, one per flavour (suite, init).
EXTRA_CTS = {
    ("bookworm", "minimal"): 200,  # the base containers already are this flavour
    ("trixie", "minimal"): 210,
    ("bookworm", "systemd"): 220,
    ("trixie", "systemd"): 221,
}

ExtraCt = Callable[..., tuple[str, int]]


@pytest.fixture(scope="session")
def extra_ct(lab: Lab) -> ExtraCt:
    """`extra_ct(suite="trixie", init="minimal") -> ("node1", ctid)`: a running
    container of that flavour in the shared lab, added on first use and left
    running (a later `up` keeps it). Use `pct exec` on the node as usual."""

    def get(suite: str = "trixie", init: str = "minimal") -> tuple[str, int]:
        ctid = EXTRA_CTS[(suite, init)]
        if ctid != 200:
            lab.add_container("node1", ctid, suite=suite, init=init)
        return "node1", ctid

    return get
