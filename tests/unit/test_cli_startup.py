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
