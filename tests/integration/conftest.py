"""Fixtures for tests that need the local lab (root, sshd, LXC)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from pctfleet.lab import Lab


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
