"""A converged container's probe of the benchmark playbook starts one Python at most:
the package listing needs the venv's interpreter, the server's /health check does not."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
KEY = "node2/200"
ROOT = "/tmp/pf-probe"
LOG = f"{ROOT}/python-starts.log"
EXTRA = {
    "bench_root": ROOT,
    "venv": f"{ROOT}/venv",
    "app_dir": f"{ROOT}/app",
    "server_env_file": f"{ROOT}/app/server.env",
    "cache_dir": f"{ROOT}/cache",
    "stale_pidfile": f"{ROOT}/run/stale.pid",
    "server_pidfile": f"{ROOT}/run/server.pid",
    "server_log": f"{ROOT}/server.log",
    "server_port": 30277,
    "bench_label": "probe",
    "standin_src": str(REPO / "src/pctfleet/lab/sglang_standin.py"),
}
# Each Python start appends a line to LOG, then becomes the real interpreter under the
# name it was called by (so a venv's python still finds its pyvenv.cfg).
WRAPPER = f"""#!/bin/bash
{{ printf '%s ' "$0" "$@" | tr '\\n' ' ' | head -c 100; echo; }} >> {LOG}
exec -a "$0" /usr/bin/python3 "$@"
"""
WRAPPER_B64 = base64.b64encode(WRAPPER.encode()).decode()
WRAPPED = ("/usr/local/bin/python3", f"{ROOT}/venv/bin/python")


def pctfleet(info, command: str, *args: str) -> subprocess.CompletedProcess:
    where = ["-i", str(info.inventory), "--limit", KEY]
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", command, *where, *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def in_ct(info, script: str) -> subprocess.CompletedProcess:
    return pctfleet(info, "exec", "--", "sh", "-c", script)


def site(info) -> dict:
    extra = json.dumps(EXTRA)
    proc = pctfleet(info, "run", str(REPO / "bench/pctfleet_site.yml"), "-e", extra, "--json")
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)["containers"][0]


def _unwrap() -> str:
    venv_python = WRAPPED[1]
    return f"rm -f {WRAPPED[0]}; rm -f {venv_python}; ln -s /usr/bin/python3 {venv_python}"


@pytest.fixture
def converged(lab):
    info = lab.up(nodes=2, containers=2)
    first = site(info)
    assert first["status"] in ("changed", "ok"), first["message"]
    yield info
    stop = f"kill $(cat {ROOT}/run/server.pid) 2>/dev/null; {_unwrap()}; rm -rf {ROOT}"
    in_ct(info, stop)


def test_a_converged_probe_starts_python_at_most_once(converged):
    install = "; ".join(
        f"rm -f {path} && echo {WRAPPER_B64} | base64 -d > {path} && chmod 755 {path}"
        for path in WRAPPED
    )
    assert in_ct(converged, f"{install}; : > {LOG}").returncode == 0
    try:
        again = site(converged)
        starts = in_ct(converged, f"cat {LOG}").stdout.splitlines()
    finally:
        in_ct(converged, _unwrap())
    assert again["status"] == "ok", again
    assert again["remote_calls"] == 1, again
    assert len(starts) <= 1, starts
