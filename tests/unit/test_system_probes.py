"""The system modules' probe snippets, run for real with sh on this machine and parsed.

They read only: getent, id, dpkg-query and the systemd check are safe to run here.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact, Plan
from pctfleet.sh import library


def planned(module: str, args: dict) -> Plan:
    """Probe with the real snippet, then plan (check mode: nothing is applied)."""
    found = REGISTRY[module]
    parsed = found.prepare(args, Context(), "test")
    done = subprocess.run(
        ["sh", "-c", library(["kv"]) + found.probe(parsed, False)], capture_output=True
    )
    return found.decide(parsed, Fact(done.stdout.decode(), done.returncode), True)


def test_root_is_read_from_getent() -> None:
    plan = planned("user", {"name": "root", "uid": 0, "home": "/root"})
    assert not plan.changed and plan.result["uid"] == 0 and plan.result["home"] == "/root", plan
    assert planned("user", {"name": "root", "uid": 1}).script == "usermod -u 1 -- root\n"


def test_a_missing_user_and_group_are_added() -> None:
    assert planned("user", {"name": "pf_nobody_here"}).script.startswith("useradd -m -- ")
    assert planned("group", {"name": "pf_nobody_here"}).changed
    group = planned("group", {"name": "root", "gid": 0})
    assert not group.changed and group.result["gid"] == 0


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg on this machine")
def test_installed_packages_are_read_from_dpkg() -> None:
    assert not planned("apt", {"name": ["dpkg", "base-files"]}).changed
    missing = planned("apt", {"name": "pf-no-such-package"})
    assert missing.changed and "apt-get install -y -q -- pf-no-such-package" in missing.script
    assert planned("apt", {"name": "dpkg", "state": "absent"}).script.count("apt-get remove") == 1


@pytest.mark.skipif(os.path.isdir("/run/systemd/system"), reason="systemd runs here")
def test_no_systemd_is_a_clear_failure() -> None:
    plan = planned("systemd_service", {"name": "cron", "state": "started"})
    assert plan.failed and plan.msg == "systemd is not running in this container"
