"""Early logins on the lab, counted in the nodes' sshd logs: one login per node for
a run and for audit (its node read and its playbook share it), and a playbook
refused before the run closes them having reached no container."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.lab

PLAYBOOK = """\
- name: hello
  hosts: all
  tasks:
    - name: say where
      command: "echo {{ greeting }} from {{ inventory_hostname }}"
      changed_when: false
"""

# A task whose state is read first: the run's first command in each container is
# the probe, which changes nothing.
FOLDER = """\
- name: folder
  hosts: all
  tasks:
    - name: a folder
      file: {path: /tmp/pctfleet-sessions, state: directory, mode: "0755"}
"""


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


@pytest.fixture
def files(info, tmp_path: Path) -> dict:
    lab_doc = yaml.safe_load(Path(info.inventory).read_text())
    doc = {k: v for k, v in lab_doc.items() if k in ("defaults", "vars", "nodes")}
    for node in doc["nodes"].values():  # the two base containers of each node
        node["containers"] = {k: v for k, v in node["containers"].items() if k in (200, 201)}
    inventory = tmp_path / "inv.yml"
    inventory.write_text(yaml.safe_dump(doc))
    playbook = tmp_path / "hello.yml"
    playbook.write_text(PLAYBOOK)
    return {"inventory": str(inventory), "playbook": str(playbook)}


def sshd_log(info, name: str) -> str:
    return (Path(info.state_dir) / name / "sshd.log").read_text(errors="replace")


def counted(info, *args: str) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """Run the CLI; the logins and the commands (sessions) each node's sshd saw."""
    before = {n: sshd_log(info, n) for n in ("node1", "node2")}
    done = subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=300
    )
    new = {n: sshd_log(info, n)[len(text) :] for n, text in before.items()}
    logins = {n: text.count("Accepted publickey") for n, text in new.items()}
    sessions = {n: text.count("Starting session") for n, text in new.items()}
    return done, logins, sessions


def test_run_logs_in_once_per_node(info, files):
    done, logins, sessions = counted(
        info, "run", files["playbook"], "-i", files["inventory"], "-e", "greeting=hi", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert logins == {"node1": 1, "node2": 1}
    assert all(count >= 2 for count in sessions.values())


def test_audit_reads_the_nodes_and_runs_the_playbook_on_one_login_per_node(info, files):
    done, logins, _ = counted(
        info, "audit", "-p", files["playbook"], "-i", files["inventory"], "-e", "greeting=hi"
    )
    assert done.returncode in (0, 2), done.stderr  # clean, or drift of the lab's own making
    assert logins == {"node1": 1, "node2": 1}


def test_a_refused_playbook_reaches_no_container(info, files):
    """Undefined variable: exit 4 as always; the early logins close, no command ran."""
    done, logins, sessions = counted(info, "run", files["playbook"], "-i", files["inventory"])
    assert done.returncode == 4, done.stderr
    assert "greeting" in done.stderr and "Traceback" not in done.stderr
    assert sessions == {"node1": 0, "node2": 0}
    assert all(count <= 1 for count in logins.values())


def test_a_node_allowing_fewer_sessions_than_asked_still_runs_every_container(lab, info, files):
    """The probes ride behind the login on channels sshd has not confirmed yet. An
    sshd allowing one session refuses the second channel, then hangs up at the exec
    sent on it; both probes run again on a new login, one session at a time. (With
    a round trip of 0.1 s the probes are ready before sshd's answer to the login,
    as on a real network; on loopback they may come after it, and then wait.)"""
    playbook = Path(files["playbook"]).with_name("folder.yml")
    playbook.write_text(FOLDER)
    # Converge first (a fresh lab has no folder yet): the run below is then the probes alone.
    args = ["run", str(playbook), "-i", files["inventory"], "--limit", "node1", "--json"]
    assert counted(info, *args)[0].returncode == 0
    with lab.max_sessions("node1", 1), lab.latency("node1", 50):
        before = sshd_log(info, "node1")
        done, logins, _ = counted(info, *args)
        seen = sshd_log(info, "node1")[len(before) :]
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(ct["status"] for ct in report["containers"]) == ["ok", "ok"]
    assert "unknown channel" in seen  # an exec went out on a channel sshd never opened
    assert logins["node1"] == 2  # the login it dropped, and one more


def test_a_command_that_may_change_things_waits_for_its_channel(lab, info, files):
    """`exec` runs what the operator typed: it never goes out on an unconfirmed
    channel, so sshd's refusal past MaxSessions only queues it."""
    with lab.max_sessions("node1", 1):
        before = sshd_log(info, "node1")
        args = ["exec", "-i", files["inventory"], "--limit", "node1", "--json", "--", "true"]
        done, logins, _ = counted(info, *args)
        seen = sshd_log(info, "node1")[len(before) :]
    assert done.returncode == 0, done.stderr
    assert [r["status"] for r in json.loads(done.stdout)["results"]] == ["ok", "ok"]
    assert "no more sessions" in seen and "unknown channel" not in seen
    assert logins["node1"] == 1


def test_a_node_limit_in_the_inventory_saves_the_second_login(lab, info, files):
    doc = yaml.safe_load(Path(files["inventory"]).read_text())
    doc["nodes"]["node1"]["max_sessions"] = 1
    inventory = Path(files["inventory"]).with_name("limited.yml")
    inventory.write_text(yaml.safe_dump(doc))
    playbook = Path(files["playbook"]).with_name("folder.yml")
    playbook.write_text(FOLDER)
    with lab.max_sessions("node1", 1):
        before = sshd_log(info, "node1")
        args = ["run", str(playbook), "-i", str(inventory), "--limit", "node1", "--json"]
        done, logins, _ = counted(info, *args)
        seen = sshd_log(info, "node1")[len(before) :]
    assert done.returncode == 0, done.stderr
    assert "unknown channel" not in seen and "no more sessions" not in seen
    assert logins["node1"] == 1


def test_a_login_banner_changes_nothing(lab, info, files, tmp_path: Path):
    """A node whose admin set sshd's `Banner`: sshd sends it during the login, ahead
    of its answer to the pipelined request and of the probes' channels. Every
    container ends ok on one login, and no output holds the banner."""
    banner = tmp_path / "issue.net"
    banner.write_text("Authorized access only. Activity is logged.\n")
    folder = Path(files["playbook"]).with_name("folder.yml")
    folder.write_text(FOLDER)
    with lab.sshd_setting("node1", "Banner", str(banner)):
        said = subprocess.run([*lab.ssh_args("node1"), "true"], capture_output=True, text=True)
        assert "Authorized access only" in said.stderr  # sshd does send it
        ran, logins, _ = counted(info, "run", str(folder), "-i", files["inventory"], "--json")
        args = ["exec", "-i", files["inventory"], "--limit", "node1", "--json", "--", "printf", "x"]
        said, _, _ = counted(info, *args)
    assert ran.returncode == 0, ran.stderr
    statuses = [c["status"] for c in json.loads(ran.stdout)["containers"]]
    assert len(statuses) == 4 and set(statuses) <= {"ok", "changed"}, statuses
    assert logins["node1"] == 1
    results = json.loads(said.stdout)["results"]
    assert [(r["status"], r["stdout"], r["stderr"]) for r in results] == [("ok", "x", "")] * 2
