"""A converged container's probe of the benchmark playbook starts one Python at most:
the package listing needs the venv's interpreter, the server's /health check does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import interpreters  # noqa: E402  (the same wrappers the benchmark counts with)

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


@pytest.fixture
def converged(lab):
    info = lab.up(nodes=2, containers=2)
    first = site(info)
    assert first["status"] in ("changed", "ok"), first["message"]
    yield info
    stop = f"kill $(cat {ROOT}/run/server.pid) 2>/dev/null; rm -rf {ROOT}"
    in_ct(info, stop)


def test_a_converged_probe_starts_python_at_most_once(converged):
    def in_container(script: str) -> tuple[int, str]:
        done = in_ct(converged, script)
        return done.returncode, done.stdout

    runs = []
    starts = interpreters.count_starts(
        in_container, EXTRA["venv"], lambda: runs.append(site(converged)), log=LOG
    )
    again = runs[0]
    assert again["status"] == "ok", again
    assert again["remote_calls"] == 1, again
    assert len(starts) <= 1, starts
