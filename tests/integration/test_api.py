"""The Python API (docs/api.md) against the real lab: the documented example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pctfleet import Fleet

pytestmark = pytest.mark.lab

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
LAB = Path("/var/lib/pctfleet-lab")


@pytest.fixture(scope="module")
def info(lab):
    info = lab.up(nodes=2, containers=2)
    if Path(info.state_dir) != LAB:
        pytest.skip(f"docs/api.md names the lab at {LAB}; this one is at {info.state_dir}")
    return info


def _logins(info, node: int) -> int:
    log = Path(info.state_dir) / f"node{node + 1}" / "sshd.log"
    return log.read_text(errors="replace").count("Accepted publickey")


def test_the_documented_example_prints_what_the_doc_says(info):
    example = re.search(
        r"## Example.*?```python\n(.*?)```\s*prints:\s*```text\n(.*?)```", DOC.read_text(), re.S
    )
    assert example, "docs/api.md lost its example or its printed output"
    code, expected = example.groups()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_inventory_ssh_options_proxyjump_takes_effect(info, tmp_path):
    """node2 reached through node1 because its ssh_options say so, as `ssh -o` would."""
    first, second = info.nodes[0], info.nodes[1]
    inventory = tmp_path / "inv.yml"
    inventory.write_text(
        textwrap.dedent(f"""\
        defaults: {{identity: {info.identity}, known_hosts: {info.known_hosts}}}
        nodes:
          jumped:
            address: {second.address}
            ssh_options: {{ProxyJump: "root@{first.address}", ServerAliveInterval: 7}}
            containers: [200]
        """)
    )
    before = _logins(info, 0), _logins(info, 1)
    with Fleet.from_inventory(inventory) as fleet:
        result = fleet.run("hostname")["jumped/200"]
        transport = fleet.containers[0]._target.node._slots[0].conn.transport
        keepalive = transport.packetizer._Packetizer__keepalive_interval
    after = _logins(info, 0), _logins(info, 1)
    assert (result.status, result.stdout) == ("ok", "n2-ct200\n")
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)  # the jump, then the node
    assert keepalive == 7  # ServerAliveInterval, not the default 15
