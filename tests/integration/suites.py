"""The Debian suites the serving-stack tests run on, and paths read inside a container.

bookworm (Debian 12, Python 3.11) is the lab's base containers; trixie (Debian 13,
Python 3.13) is node1/221, booted with systemd as PID 1 like a Proxmox VE 9 template.
No test names a Python version or a site-packages path: each is read in the container.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pctfleet.inventory.load import load_inventory

TRIXIE_CT = "node1/221"  # trixie + systemd
TRIXIE_SPARE = "node1/210"  # trixie + minimal init: only ever stopped and started here
UNIT = "pctfleet-sglang.service"  # site.yml's server task is named `sglang`

PURELIB = 'import sysconfig; print(sysconfig.get_paths()["purelib"])'


def suite_params(bookworm: object, trixie: object) -> list:
    """pytest params with the ids "bookworm" and "trixie"."""
    return [pytest.param(bookworm, id="bookworm"), pytest.param(trixie, id="trixie")]


def ensure_trixie(extra_ct) -> None:
    """The shared lab's trixie containers exist and run (added on first use)."""
    extra_ct("trixie", "systemd")
    extra_ct("trixie", "minimal")


def ct_exec(inventory: str, key: str, *argv: str, timeout: float = 900) -> str:
    """stdout of one command in one container; a failure fails the test."""
    proc = subprocess.run(
        [sys.executable, "-m", "pctfleet", "exec", "-i", inventory, "--limit", key, "--", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (key, argv, proc.stderr[-2000:])
    return proc.stdout


def site_packages(inventory: str, key: str, venv: str = "/opt/sglang") -> str:
    """The venv's site-packages folder as its own Python reports it."""
    return ct_exec(inventory, key, f"{venv}/bin/python", "-c", PURELIB).strip()


def cuda_home(inventory: str, key: str, venv: str = "/opt/sglang") -> str:
    """The pip wheels' CUDA toolkit folder in the venv."""
    return f"{site_packages(inventory, key, venv)}/nvidia/cu13"


def server_port(inventory: str, key: str) -> int:
    """The container's `server_port` from the inventory."""
    inv = load_inventory(inventory)
    container = inv.get(key)
    assert container is not None, key
    return int(inv.vars_for(container)["server_port"])


def unit_state(inventory: str, key: str) -> tuple[str, str, str]:
    """(is-enabled, MainPID, the PID file) of the server's unit in a systemd container."""
    script = (
        f"systemctl is-enabled {UNIT}; systemctl show -p MainPID --value {UNIT}; "
        "cat /run/pctfleet/sglang.pid"
    )
    enabled, main_pid, pidfile = ct_exec(inventory, key, "sh", "-c", script).split()
    return enabled, main_pid, pidfile
