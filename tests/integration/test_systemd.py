"""The server where systemd is PID 1, as in Proxmox's own Debian templates.

The `server` module runs it as an enabled unit: it comes back on its own after the
container restarts (`pct reboot` on the node) and after it crashes, and a run or an
audit afterwards finds nothing to do. A server started by hand with nohup on the port is
found and stopped first, as in the detached mode. Bookworm and trixie containers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pctfleet.lab.system import attach
from pctfleet.sh import library

pytestmark = pytest.mark.lab

PORTS = {"bookworm": 30140, "trixie": 30141}
UNIT = "pctfleet-unitweb.service"


class Ct:
    """One lab container of the systemd flavour, reached with lxc-attach for the checks."""

    def __init__(self, lab, suite: str, node: str, ctid: int) -> None:
        self.lab, self.node, self.ctid, self.port = lab, node, ctid, PORTS[suite]
        self.key = f"{node}/{ctid}"
        index = node.removeprefix("node")
        self.attach = ["lxc-attach", "-P", str(lab.lxcpath), "-n", f"pctfleet-n{index}-{ctid}"]

    def sh(self, script: str, check: bool = True) -> str:
        done = attach([*self.attach, "--", "sh", "-c", script])
        if check:
            assert done.returncode == 0, (script, done.stderr.decode()[-2000:])
        return done.stdout.decode().strip()

    def port_pids(self) -> list[int]:
        script = library(["listener"]) + f"pctfleet_port_pids /proc {self.port}"
        return [int(p) for p in self.sh(script).split()]

    def main_pid(self) -> int:
        """0 while the unit has no main process, or while systemd is still booting."""
        out = self.sh(f"systemctl show -p MainPID --value {UNIT} 2>/dev/null", check=False)
        return int(out) if out.isdigit() else 0

    def wait_serving(self, not_pid: int = 0, seconds: float = 40) -> int:
        """The unit's main PID once it (a PID other than `not_pid`) holds the port."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pid = self.main_pid()
            if pid not in (0, not_pid) and self.port_pids() == [pid]:
                return pid
            time.sleep(0.5)
        raise AssertionError(f"{UNIT} did not come back on port {self.port}")


@pytest.fixture(params=["bookworm", "trixie"])
def ct(request, lab, extra_ct):
    node, ctid = extra_ct(request.param, "systemd")
    box = Ct(lab, request.param, node, ctid)
    started: list[int] = []
    box.started = started
    yield box
    box.sh(f"systemctl disable --now {UNIT} 2>/dev/null; rm -f /etc/systemd/system/{UNIT}", False)
    box.sh("rm -rf /etc/pctfleet/server-unitweb.* /run/pctfleet/unitweb.pid*", False)
    box.sh("systemctl daemon-reload", False)
    for pid in started:
        box.sh(f"kill -KILL {pid} 2>/dev/null; :", False)


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=300
    )


def serve(ct: Ct, tmp_path: Path, state: str = "started", command: str = "run") -> dict:
    book = tmp_path / "unitweb.yml"
    book.write_text(
        textwrap.dedent(f"""\
        - hosts: all
          tasks:
            - name: web as a unit
              server:
                name: unitweb
                command: python3 -m http.server {ct.port} --bind 127.0.0.1
                ready_url: http://127.0.0.1:{ct.port}/
                ready_timeout: 30
                stop_grace: 3
                state: {state}
        """)
    )
    inventory = str(ct.lab.inventory)
    if command == "audit":
        done = pctfleet("audit", "-i", inventory, "--limit", ct.key, "-p", str(book), "--json")
    else:
        done = pctfleet("run", str(book), "-i", inventory, "--limit", ct.key, "--json")
    assert done.stdout, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    doc["exit"] = done.returncode
    return doc


def test_a_unit_server_replaces_a_hand_started_one_and_survives_restart_and_crash(ct, tmp_path):
    hand = f"nohup python3 -m http.server {ct.port} --bind 127.0.0.1 >/dev/null 2>&1 & echo $!"
    stranger = int(ct.sh(hand))
    ct.started.append(stranger)
    for _ in range(50):
        if ct.port_pids() == [stranger]:
            break
        time.sleep(0.1)

    first = serve(ct, tmp_path)
    assert first["exit"] == 0, first
    (task,) = first["containers"][0]["tasks"]
    assert task["status"] == "changed" and task["details"]["manager"] == "systemd", task
    assert f"pid {stranger} (python3 -m http.server {ct.port}" in task["msg"], task
    assert ct.sh(f"systemctl is-enabled {UNIT}") == "enabled"
    pid = ct.main_pid()
    assert ct.port_pids() == [pid], "the listener is not the unit's main process"
    assert ct.sh("cat /run/pctfleet/unitweb.pid") == str(pid)
    assert "PCTFLEET_SERVER=unitweb" in ct.sh(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    assert ct.sh(f"kill -0 {stranger} 2>/dev/null && echo alive || echo gone") == "gone"

    again = serve(ct, tmp_path)["containers"][0]
    assert again["stats"]["changed"] == 0 and again["remote_calls"] == 1, again["tasks"]

    reboot = subprocess.run(
        [*ct.lab.ssh_args(ct.node), "pct", "reboot", str(ct.ctid)], capture_output=True, text=True
    )
    assert reboot.returncode == 0, reboot.stderr
    back = ct.wait_serving()
    # The unit's launcher wrote the PID file (/run is new after a boot): the cache module
    # stops the server by it before clearing a JIT cache.
    assert ct.sh("cat /run/pctfleet/unitweb.pid") == str(back)
    audit = serve(ct, tmp_path, command="audit")
    assert audit["exit"] == 0, json.dumps(audit)[-2000:]
    after = serve(ct, tmp_path)["containers"][0]
    assert after["stats"]["changed"] == 0 and after["remote_calls"] == 1, after["tasks"]

    ct.sh(f"kill -KILL {back}")
    revived = ct.wait_serving(not_pid=back)
    assert ct.sh("cat /run/pctfleet/unitweb.pid") == str(revived)


def test_stopped_disables_and_removes_the_unit(ct, tmp_path):
    assert serve(ct, tmp_path)["exit"] == 0
    stopped = serve(ct, tmp_path, state="stopped")
    assert stopped["exit"] == 0
    assert stopped["containers"][0]["stats"]["changed"] == 1
    assert ct.sh(f"test -e /etc/systemd/system/{UNIT} && echo left || echo removed") == "removed"
    assert ct.port_pids() == []
    assert serve(ct, tmp_path, state="stopped")["containers"][0]["stats"]["changed"] == 0
