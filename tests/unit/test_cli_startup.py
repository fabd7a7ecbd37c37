"""The CLI starts without importing what its commands load on demand."""

from __future__ import annotations

import json
import subprocess
import sys

# Loaded on first use: task modules by name, the lab only for `lab` commands.
LAZY = (
    "pctfleet.modules.toolchain",
    "pctfleet.modules.pip",
    "pctfleet.modules.server",
    "pctfleet.cuda.compile_probe",
    "pctfleet.lab.lab",
    "pctfleet.lab.rootfs",
    "tarfile",
    # SSH is loaded to connect (a third of start-up); pydantic only for a refused value.
    "fabric",
    "paramiko",
    "pydantic",
)


def test_importing_the_cli_leaves_task_modules_and_the_lab_unloaded() -> None:
    script = "import json, sys, pctfleet.cli.main; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert sorted(loaded & set(LAZY)) == []


def test_the_lab_class_is_still_reachable_from_the_package() -> None:
    from pctfleet.lab import Lab
    from pctfleet.lab.lab import Lab as Direct

    assert Lab is Direct


# A run's logins start as soon as its containers are selected (transport/early.py);
# these load after that, while the logins are in flight.
AFTER_LOGINS_START = ("jinja2", "pctfleet.run.engine", "pctfleet.playbook.templating")


def test_a_run_starts_its_logins_before_the_engine_and_jinja_load(tmp_path) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text("nodes:\n  pve1:\n    address: 127.0.0.1\n    containers: [200]\n")
    playbook = tmp_path / "site.yml"
    playbook.write_text("- hosts: all\n  tasks: []\n")
    script = f"""
import json, os, sys
from pctfleet.transport import early
def start(nodes, channels=None):
    print(json.dumps([m for m in {AFTER_LOGINS_START!r} if m in sys.modules]), flush=True)
    os._exit(0)
early.start = start
from pctfleet.cli.main import console
sys.argv = ["pctfleet", "run", {str(playbook)!r}, "-i", {str(inventory)!r}]
console()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
