"""`pctfleet verify` and the pct:// testinfra backend against the real lab.

On bookworm node1/200 carries a full site.yml setup and is only read here; node1/201
is stopped and started again to show a stopped container is never "passed". On trixie
node1/221 (systemd as PID 1) carries the setup and node1/210 is the one stopped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from suites import TRIXIE_CT, TRIXIE_SPARE, ensure_trixie, suite_params, unit_state

from pctfleet import exitcodes
from pctfleet.lab import Lab

pytestmark = pytest.mark.lab

CHECKS = [
    "test_toolchain_matched",
    "test_links_resolve",
    "test_cccl_overlay_matches_manifest",
    "test_jit_cache_not_stale",
    "test_server_pid_alive",
    "test_server_port_listens",
    "test_server_health_200",
]

USER_TEST = """
def test_hostname_is_nope(host):
    name = host.file("/etc/hostname").content_string.strip()
    assert name == "nope", f"hostname is {name!r}, not 'nope'"


def test_debian_SUITE(host):
    assert host.file("/etc/os-release").contains("SUITE")
"""


@dataclass(frozen=True)
class Pair:
    """One suite's containers on node1: one provisioned, one to stop."""

    suite: str
    served: int
    stopped: int

    @property
    def key(self) -> str:
        return f"node1/{self.served}"

    @property
    def off(self) -> str:
        return f"node1/{self.stopped}"

    def user_test(self) -> str:
        return USER_TEST.replace("SUITE", self.suite)


BOOKWORM = Pair("bookworm", 200, 201)
TRIXIE = Pair("trixie", int(TRIXIE_CT.split("/")[1]), int(TRIXIE_SPARE.split("/")[1]))


@pytest.fixture(scope="module", autouse=True, params=suite_params(BOOKWORM, TRIXIE))
def pair(request, lab: Lab, extra_ct) -> Pair:
    """The served container holds what site.yml promises (one call when it already does)."""
    if request.param is TRIXIE:
        ensure_trixie(extra_ct)
    argv = [
        sys.executable,
        "-m",
        "pctfleet",
        "provision",
        "-i",
        str(lab.inventory),
        "--limit",
        request.param.key,
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return request.param


def verify(lab: Lab, *args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pctfleet", "verify", "-i", str(lab.inventory), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def document(proc: subprocess.CompletedProcess) -> dict:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def outcomes(row: dict) -> dict[str, str]:
    return {check["id"]: check["outcome"] for check in row["checks"]}


def test_a_provisioned_container_passes_every_check(lab: Lab, pair: Pair) -> None:
    proc = verify(lab, "--limit", pair.key, "--json")
    assert proc.returncode == exitcodes.OK, proc.stdout + proc.stderr
    (row,) = document(proc)["containers"]
    assert row["container"] == pair.key and row["status"] == "passed"
    assert outcomes(row) == dict.fromkeys(CHECKS, "passed")
    assert all(check["message"] for check in row["checks"])  # each says what it saw
    print(f"facts of {pair.key} read in {row['seconds']}s")


def test_k_selects_checks_and_the_table_names_them(lab: Lab, pair: Pair) -> None:
    proc = verify(lab, "--limit", pair.key, "-k", "server and not health")
    assert proc.returncode == exitcodes.OK, proc.stdout + proc.stderr
    assert "test_server_pid_alive" in proc.stdout and "test_server_port_listens" in proc.stdout
    assert "test_server_health_200" not in proc.stdout
    assert "test_toolchain_matched" not in proc.stdout


def test_a_check_that_fails_for_real_exits_1_and_is_named(
    lab: Lab, pair: Pair, tmp_path: Path
) -> None:
    user_test = tmp_path / "test_site.py"
    user_test.write_text(pair.user_test())
    junit = tmp_path / "verify.xml"
    proc = verify(lab, "-l", pair.key, "--tests", str(user_test), "--junit", str(junit), "--json")
    assert proc.returncode == exitcodes.ERROR, proc.stdout + proc.stderr
    (row,) = document(proc)["containers"]
    assert row["status"] == "failed"
    results = {check["id"]: check for check in row["checks"]}
    assert results["test_hostname_is_nope"]["outcome"] == "failed"
    hostname = f"n1-ct{pair.served}"
    assert results["test_hostname_is_nope"]["message"] == f"hostname is {hostname!r}, not 'nope'"
    assert results[f"test_debian_{pair.suite}"]["outcome"] == "passed"
    assert all(results[check]["outcome"] == "passed" for check in CHECKS)
    assert f'name="test_hostname_is_nope[pct://{pair.key}]"' in junit.read_text()


def test_a_stopped_container_is_ct_stopped_never_passed(lab: Lab, pair: Pair) -> None:
    lab.stop_container("node1", pair.stopped)
    try:
        proc = verify(lab, "--limit", f"{pair.key},{pair.off}", "--json")
    finally:
        lab.start_container("node1", pair.stopped)
    assert proc.returncode == exitcodes.ERROR, proc.stdout + proc.stderr
    data = document(proc)
    rows = {row["container"]: row for row in data["containers"]}
    assert rows[pair.key]["status"] == "passed"
    stopped = rows[pair.off]
    assert stopped["status"] == "ct-stopped"
    assert f"container {pair.stopped} is not running" in stopped["message"]
    assert "passed" not in outcomes(stopped).values()
    assert data["summary"]["ct-stopped"] == 1 and data["summary"]["passed"] == 1


def test_bad_input_is_one_line_and_exit_5(lab: Lab, pair: Pair) -> None:
    for args in (["--tests", "/no/such/tests"], ["-l", pair.key, "-k", "nothing_matches"]):
        proc = verify(lab, *args)
        assert proc.returncode == exitcodes.BAD_OPTIONS, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# Records which TCP connections to the node this pytest process held at the end:
# the lab's other users may log in meanwhile, so the sshd log is read by port.
PORTS_CONFTEST = """
import json, os

def _own_ports(remote):
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = []
    with open("/proc/self/net/tcp") as fh:
        for line in fh.read().splitlines()[1:]:
            f = line.split()
            if f[2] == remote and f[9] in inodes:
                ports.append(int(f[1].split(":")[1], 16))
    return ports

def pytest_sessionfinish(session):
    with open(os.environ["PORTS_FILE"], "w") as fh:
        json.dump(_own_ports(os.environ["SSHD_HEX"]), fh)
"""


def _hex_endpoint(address: str, port: int) -> str:
    octets = [int(part) for part in address.split(".")]
    return "".join(f"{octet:02X}" for octet in reversed(octets)) + f":{port:04X}"


def test_plain_pytest_with_pct_hosts_uses_one_connection(
    lab: Lab, pair: Pair, tmp_path: Path
) -> None:
    node = lab.info.node("node1")
    (tmp_path / "test_site.py").write_text(pair.user_test().split("\n\n\n")[1])
    (tmp_path / "conftest.py").write_text(textwrap.dedent(PORTS_CONFTEST))
    query = f"identity={lab.identity}&known_hosts={lab.known_hosts}"
    hosts = ",".join(
        f"pct://root@{node.address}:{node.port}?container={ctid}&{query}"
        for ctid in (pair.served, pair.stopped)
    )
    ports_file = tmp_path / "ports.json"
    env = {"PORTS_FILE": str(ports_file), "SSHD_HEX": _hex_endpoint(node.address, node.port)}
    log = lab.state_dir / "node1" / "sshd.log"
    seen = len(log.read_text(errors="replace").splitlines())
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", f"--hosts={hosts}", "-p", "no:cacheprovider", "-v"],
        cwd=tmp_path,
        env={**_environ(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for ctid in (pair.served, pair.stopped):
        assert f"test_debian_{pair.suite}[pct://127.0.10.1/{ctid}] PASSED" in proc.stdout
    ports = json.loads(ports_file.read_text())
    assert len(ports) == 1, f"one SSH connection for two containers, got ports {ports}"
    new = log.read_text(errors="replace").splitlines()[seen:]
    ours = [line for line in new if "Accepted publickey" in line and f"port {ports[0]} " in line]
    assert len(ours) == 1, new


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_after_a_restart_the_unit_serves_again_and_passes(lab: Lab, pair: Pair) -> None:
    """systemd brings the server back on its own (/run emptied): the PID file names it."""
    if pair is not TRIXIE:
        pytest.skip("no init system here brings the server back after a restart")
    lab.restart_container("node1", pair.served)
    deadline = time.monotonic() + 60
    while True:  # the unit is started at boot; the server answers a moment later
        proc = verify(lab, "--limit", pair.key, "--json")
        if proc.returncode == exitcodes.OK or time.monotonic() > deadline:
            break
        time.sleep(1)
    (row,) = document(proc)["containers"]
    assert outcomes(row) == dict.fromkeys(CHECKS, "passed"), row["checks"]
    enabled, main_pid, pidfile = unit_state(str(lab.inventory), pair.key)
    assert (enabled, main_pid) == ("enabled", pidfile)
    # site.yml in check mode plus the stale-process and cache probes: nothing drifted.
    audit = [sys.executable, "-m", "pctfleet", "audit", "-i", str(lab.inventory), "--json"]
    audited = subprocess.run([*audit, "--limit", pair.key], capture_output=True, text=True)
    assert audited.returncode == exitcodes.OK, audited.stdout[-3000:] + audited.stderr[-1000:]
