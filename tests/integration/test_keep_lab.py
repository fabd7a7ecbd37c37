"""Kept logins (`--persist`) on the lab, counted in the nodes' sshd logs: the next
command logs in nowhere and never loads paramiko; an edited known_hosts, a dead
kept connection and a killed keeper each mean a fresh login of our own; a node
whose key is unknown is never kept; `connections --close` ends the keeper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.lab

NODES = ("node1", "node2")


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict]:
    """A keeper of the test's own (its socket in a fresh runtime folder); ended after."""
    with tempfile.TemporaryDirectory(prefix="rt", dir="/tmp") as runtime:
        os.chmod(runtime, 0o700)
        environ = {**os.environ, "XDG_RUNTIME_DIR": runtime}
        yield environ
        subprocess.run(
            [sys.executable, "-m", "pctfleet", "connections", "--close"],
            env=environ,
            capture_output=True,
            timeout=60,
        )
        for pid_file in Path(runtime, "pctfleet").glob("*.pid"):
            _wait_gone(int(pid_file.read_text()))


def _wait_gone(pid: int, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)  # our keeper, by its PID file
    raise AssertionError(f"keeper {pid} did not end")


@pytest.fixture
def inventory(info, tmp_path: Path) -> str:
    doc = yaml.safe_load(Path(info.inventory).read_text())
    doc = {k: v for k, v in doc.items() if k in ("defaults", "vars", "nodes")}
    for node in doc["nodes"].values():
        node["containers"] = {k: v for k, v in node["containers"].items() if k in (200, 201)}
    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def sshd_log(info, name: str) -> str:
    return (Path(info.state_dir) / name / "sshd.log").read_text(errors="replace")


def cli(info, env: dict, *args: str, python: tuple[str, ...] = ()) -> tuple:
    """Run the CLI: its result and the logins each node's sshd saw meanwhile."""
    before = {n: sshd_log(info, n) for n in NODES}
    done = subprocess.run(
        [sys.executable, *python, "-m", "pctfleet", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    logins = {n: sshd_log(info, n)[len(before[n]) :].count("Accepted publickey") for n in NODES}
    return done, logins


def kept(env: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "pctfleet", "connections", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_kept(env: dict, count: int = 2) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        document = kept(env)
        if sum(1 for item in document["kept"] if item["alive"]) == count:
            return document
        time.sleep(0.1)
    raise AssertionError(f"the keeper holds {kept(env)}")


def exec_json(info, env: dict, inventory: str, *more: str, python: tuple[str, ...] = ()):
    done, logins = cli(
        info,
        env,
        *("exec", "-i", inventory, "--persist", "60", "--json", *more, "--", "hostname"),
        python=python,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), logins, done


def test_the_next_command_logs_in_nowhere(info, env, inventory) -> None:
    first, logins, _ = exec_json(info, env, inventory)
    assert logins == {"node1": 1, "node2": 1}
    assert first["connections"] == {"node1": 1, "node2": 1}
    assert first["connections_reused"] == {"node1": 0, "node2": 0}
    wait_kept(env)
    second, logins, done = exec_json(info, env, inventory, python=("-X", "importtime"))
    assert logins == {"node1": 0, "node2": 0}
    assert second["connections"] == {"node1": 0, "node2": 0}
    assert second["connections_reused"] == {"node1": 1, "node2": 1}
    assert [r["stdout"] for r in second["results"]] == [r["stdout"] for r in first["results"]]
    assert "paramiko" not in done.stderr  # -X importtime lists every module loaded


def test_an_edited_known_hosts_means_a_fresh_login(info, env, inventory, tmp_path) -> None:
    known = tmp_path / "known_hosts"
    known.write_bytes(Path(info.known_hosts).read_bytes())
    exec_json(info, env, inventory, "--known-hosts", str(known))
    wait_kept(env)
    _, logins, _ = exec_json(info, env, inventory, "--known-hosts", str(known))
    assert logins == {"node1": 0, "node2": 0}
    with known.open("a") as handle:
        handle.write("# reviewed\n")
    document, logins, _ = exec_json(info, env, inventory, "--known-hosts", str(known))
    assert logins == {"node1": 1, "node2": 1}
    assert document["connections_reused"] == {"node1": 0, "node2": 0}


def test_an_unknown_host_key_is_refused_and_nothing_is_kept(info, env, inventory, tmp_path):
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    args = ("exec", "-i", inventory, "--persist", "60", "--known-hosts", str(empty), "--json")
    done, logins = cli(info, env, *args, "--", "true")
    assert done.returncode == 3, done.stderr
    statuses = {r["status"] for r in json.loads(done.stdout)["results"]}
    assert statuses == {"unreachable"}
    assert "hostkey" in done.stdout
    assert logins == {"node1": 0, "node2": 0}
    assert kept(env)["kept"] == []


def _keeper_pid(env: dict) -> int:
    return int(kept(env)["keeper_pid"])


def _session_of(keeper_pid: int, peer: str) -> int:
    """The PID of the sshd process serving the keeper's connection to `peer`."""
    lines = subprocess.run(
        ["ss", "-tnpH", "state", "established"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    ours = [ln for ln in lines if f"pid={keeper_pid}," in ln and ln.split()[3] == peer]
    assert len(ours) == 1, lines
    local = ours[0].split()[2]
    served = [ln for ln in lines if ln.split()[3] == local and "sshd" in ln]
    assert len(served) == 1, lines
    return int(served[0].split("pid=")[1].split(",")[0])


def test_a_dead_kept_connection_means_a_fresh_login(info, env, inventory) -> None:
    exec_json(info, env, inventory)
    wait_kept(env)
    address = yaml.safe_load(Path(inventory).read_text())["nodes"]["node1"]["address"]
    os.kill(_session_of(_keeper_pid(env), f"{address}:22"), signal.SIGTERM)  # the lab's sshd
    time.sleep(0.5)
    document, logins, _ = exec_json(info, env, inventory)
    assert logins == {"node1": 1, "node2": 0}
    assert document["connections_reused"] == {"node1": 0, "node2": 1}
    assert {r["status"] for r in document["results"]} == {"ok"}


def test_a_killed_keeper_means_fresh_logins_and_a_new_keeper(info, env, inventory) -> None:
    exec_json(info, env, inventory)
    wait_kept(env)
    old = _keeper_pid(env)
    os.kill(old, signal.SIGKILL)  # started by this test's command
    _wait_gone(old)
    document, logins, _ = exec_json(info, env, inventory)
    assert logins == {"node1": 1, "node2": 1}
    assert {r["status"] for r in document["results"]} == {"ok"}
    assert wait_kept(env)["keeper_pid"] != old


def test_close_ends_the_keeper(info, env, inventory) -> None:
    exec_json(info, env, inventory)
    listing = wait_kept(env)
    assert sorted(item["node"] for item in listing["kept"]) == ["node1", "node2"]
    done = subprocess.run(
        [sys.executable, "-m", "pctfleet", "connections", "--close", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert json.loads(done.stdout)["closed"] == 2  # both logins: their keeper has ended
    with pytest.raises(ProcessLookupError):  # --close returns once the keeper has ended
        os.kill(listing["keeper_pid"], 0)
    assert kept(env) == {"keeper_pid": None, "kept": [], "closed": 0}
    _, logins, _ = exec_json(info, env, inventory)
    assert logins == {"node1": 1, "node2": 1}
    assert wait_kept(env)["keeper_pid"] != listing["keeper_pid"]  # a new keeper took them


def test_verify_sessions_reuse_the_kept_login(info, env, inventory) -> None:
    args = ("verify", "-i", inventory, "--persist", "60", "--json")
    cli(info, env, *args)
    wait_kept(env)
    done, logins = cli(info, env, *args)
    assert json.loads(done.stdout)["summary"]["unreachable"] == 0, done.stderr
    assert logins == {"node1": 0, "node2": 0}


def test_audit_reads_nodes_and_containers_on_the_kept_login(info, env, inventory) -> None:
    args = ("audit", "-i", inventory, "--persist", "60", "--json")
    first, logins = cli(info, env, *args)
    assert logins == {"node1": 1, "node2": 1}, first.stderr
    wait_kept(env)
    second, logins = cli(info, env, *args)
    assert logins == {"node1": 0, "node2": 0}, second.stderr
    assert second.returncode == first.returncode
    statuses = [c["status"] for c in json.loads(second.stdout)["containers"]]
    assert statuses == [c["status"] for c in json.loads(first.stdout)["containers"]]
