"""A node whose root's ~/.bashrc talks, as an admin's greeting there does.

sshd runs every command through root's bash, which reads ~/.bashrc first (Debian
builds bash to do so for commands run by sshd), so the greeting comes ahead of
each command's output. What a command in a container prints is still exactly its
own output: registered, fetched and shown.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.lab

KEY = "node1/200"
DIR = "/tmp/pctfleet-greeting"
GREETING = 'echo "Welcome to $(hostname), root."\necho "no tty here" >&2\n'
PLAYBOOK = textwrap.dedent(f"""\
    - hosts: all
      tasks:
        - name: a file
          copy: {{dest: {DIR}/said, content: "exactly this\\n"}}
        - name: read it
          command: cat {DIR}/said
          register: said
          changed_when: false
        - name: what was read is the file
          assert:
            that: ['said.stdout == "exactly this"', 'said.stdout_lines | length == 1']
        - name: fetch it
          fetch: {{src: {DIR}/said, dest: fetched}}
""")


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture
def greeting(lab):
    info = lab.up(nodes=2, containers=2)
    with lab.root_bashrc("node1", GREETING):
        said = subprocess.run([*lab.ssh_args("node1"), "true"], capture_output=True, text=True)
        assert said.stdout.startswith("Welcome to node1"), said  # the node does talk
        yield info
    pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "rm", "-rf", DIR)


def test_a_commands_output_is_its_own(greeting):
    done = pctfleet("exec", "-i", str(greeting.inventory), "--limit", KEY, "--", "printf", "a b")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a b"
    done = pctfleet(
        "exec", "-i", str(greeting.inventory), "--limit", KEY, "--json", "--", "printf", "a b"
    )
    [result] = json.loads(done.stdout)["results"]
    assert (result["stdout"], result["stderr"]) == ("a b", "")


def test_a_playbook_reads_and_fetches_what_the_container_holds(greeting, tmp_path: Path):
    book = tmp_path / "greeting.yml"
    book.write_text(PLAYBOOK)
    args = ["run", str(book), "-i", str(greeting.inventory), "--limit", KEY, "--json"]
    first = pctfleet(*args, "--journal-dir", str(tmp_path / "runs"))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    fetched = tmp_path / "fetched" / KEY / DIR.lstrip("/") / "said"
    assert fetched.read_bytes() == b"exactly this\n"
    again = pctfleet(*args, "--journal-dir", str(tmp_path / "runs"))
    assert again.returncode == 0, again.stderr
    [run] = json.loads(again.stdout)["containers"]
    assert run["status"] == "ok", run  # converged: the copy's probe read the file right


def test_discovery_reads_the_node_past_its_greeting(greeting, tmp_path: Path):
    doc = yaml.safe_load(Path(greeting.inventory).read_text())
    doc["nodes"] = {"node1": {"address": doc["nodes"]["node1"]["address"], "discover": {}}}
    inventory = tmp_path / "discover.yml"
    inventory.write_text(yaml.safe_dump(doc))
    listed = pctfleet("inventory", "discover", "-i", str(inventory), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["ctid"]: row["status"] for row in json.loads(listed.stdout)["containers"]}
    assert (rows.get(200), rows.get(201)) == ("running", "running"), rows


def test_a_pct_failure_says_what_pct_said_and_no_greeting(greeting, tmp_path: Path):
    doc = yaml.safe_load(Path(greeting.inventory).read_text())
    doc["nodes"]["node1"]["containers"][299] = {}  # a container the node does not have
    inventory = tmp_path / "missing.yml"
    inventory.write_text(yaml.safe_dump(doc))
    args = ["exec", "-i", str(inventory), "--limit", "node1/299"]
    shown = pctfleet(*args, "--", "true")  # streamed as it comes
    assert "Welcome" not in shown.stdout + shown.stderr, shown
    assert "container 299 does not exist on node1" in shown.stderr, shown
    [result] = json.loads(pctfleet(*args, "--json", "--", "true").stdout)["results"]
    assert result["stdout"] == "", result
    assert "container 299 does not exist on node1" in result["message"], result
