"""doctor and audit name a server started by hand on the serving port: its PID and command
line, "not started by pctfleet"; audit counts it as drift (exit 2). It is stopped by PID.

The lab has no /dev/nvidia*: GPU holders are covered by the fake /proc unit tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from pctfleet.sh import library
from tests.integration.test_brownfield import KEY, in_ct

pytestmark = pytest.mark.lab

PORT = 30124  # not the stack's port, nor test_brownfield's 30123
_PORT_PIDS = library(["listener"]) + f"pctfleet_port_pids /proc {PORT}"


@pytest.fixture
def stranger(lab):
    """`nohup python3 -m http.server` by hand in node2/201; stopped by its PID afterwards."""
    info = lab.up(nodes=2, containers=2)
    hand = f"nohup python3 -m http.server {PORT} --bind 127.0.0.1 >/dev/null 2>&1 & echo $!"
    pid = int(in_ct(hand).stdout)
    try:
        in_ct(f"for i in $(seq 50); do {_PORT_PIDS} | grep -qx {pid} && exit 0; sleep 0.1; done")
        yield info, pid, f"python3 -m http.server {PORT} --bind 127.0.0.1"
    finally:
        in_ct(f"kill -KILL {pid} 2>/dev/null; :")


def _pctfleet(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *argv], capture_output=True, text=True, timeout=300
    )


def _inventory(info, tmp_path: Path) -> Path:
    """The lab's inventory with node2/201 serving on PORT."""
    data = yaml.safe_load(Path(info.inventory).read_text())
    data["nodes"]["node2"]["containers"][201]["vars"]["server_port"] = PORT
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_doctor_names_the_hand_started_pid_and_command_line(stranger, tmp_path):
    info, pid, cmdline = stranger
    inventory = str(_inventory(info, tmp_path))
    done = _pctfleet("doctor", "-i", inventory, "--limit", KEY, "--no-probe", "--json")
    assert done.returncode == 2, done.stderr[-2000:]
    (container,) = json.loads(done.stdout)["containers"]
    assert container["remote_calls"] == 1
    assert {"pid": pid, "cmdline": cmdline, "why": f"listening on port {PORT}"} in container[
        "stale_processes"
    ], container.get("stale_processes")
    text = _pctfleet("doctor", "-i", inventory, "--limit", KEY, "--no-probe")
    wanted = f"port {PORT} held by PID {pid} `{cmdline}`, not started by pctfleet"
    assert wanted in " ".join(text.stdout.split()), text.stdout[-3000:]


def test_audit_counts_the_hand_started_server_as_drift(stranger, tmp_path):
    info, pid, cmdline = stranger
    book = tmp_path / "tiny.yml"
    book.write_text(
        textwrap.dedent("""\
        - hosts: all
          tasks:
            - name: tmp exists
              file: {path: /tmp, state: directory}
        """)
    )
    done = _pctfleet(
        "audit", "-i", str(info.inventory), "--limit", KEY, "-p", str(book),
        "-e", f"server_port={PORT}", "--json", "--baseline-file", str(tmp_path / "b.json"),
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    (container,) = json.loads(done.stdout)["containers"]
    wanted = f"port {PORT} held by PID {pid} `{cmdline}`, not started by pctfleet"
    found = [(d["kind"], d["what"], d["expected"], d["actual"]) for d in container["drift"]]
    expected = ("stale-process", f"pid {pid}", "only processes pctfleet started", wanted)
    assert expected in found, container["drift"]
    assert container["remote_calls"] == 1


def test_audit_is_clean_for_a_server_pctfleet_started_under_another_name(lab, tmp_path):
    """A server task not named like the site playbook's (nor its PID file) is still ours."""
    info = lab.up(nodes=2, containers=2)
    book = tmp_path / "own.yml"
    book.write_text(
        textwrap.dedent(f"""\
        - hosts: all
          tasks:
            - name: own server
              server:
                name: ownsrv
                command: [python3, -m, http.server, "{PORT}", --bind, 127.0.0.1]
                pidfile: /run/own/ownsrv.pid
                logfile: /tmp/ownsrv.log
                ready_port: {PORT}
        """)
    )
    common = ["-i", str(info.inventory), "--limit", KEY, "-e", f"server_port={PORT}"]
    try:
        started = _pctfleet("run", *common, str(book))
        assert started.returncode == 0, started.stdout[-2000:]
        done = _pctfleet(
            "audit", *common, "-p", str(book), "--json",
            "--baseline-file", str(tmp_path / "b.json"),
        )  # fmt: skip
        (container,) = json.loads(done.stdout)["containers"]
        assert not [d for d in container["drift"] if d["kind"] == "stale-process"], container
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    finally:  # its group, by the PID its file names
        in_ct("p=$(cat /run/own/ownsrv.pid 2>/dev/null) && kill -TERM -$p; rm -rf /run/own; :")
