"""A node's channel limit on the real lab: configured, or discovered from sshd's refusal."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodeConnection
from tests.integration.test_transport import _accepted_logins, options, pctfleet

pytestmark = pytest.mark.lab

PAIR = "node1/200,node1/201"


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def _limited_inventory(info, tmp_path: Path, sessions: int) -> Path:
    text = Path(info.inventory).read_text()
    address = f"    address: {info.nodes[0].address}\n"
    assert address in text
    path = tmp_path / "inventory.yml"
    path.write_text(text.replace(address, f"{address}    max_sessions: {sessions}\n", 1))
    return path


def test_a_configured_node_limit_holds_and_every_container_succeeds_with_one_login(info, tmp_path):
    inventory = _limited_inventory(info, tmp_path, 1)
    before = _accepted_logins(info, 0)
    span = "date +%s.%N; sleep 1; date +%s.%N"
    proc = pctfleet("exec", "-i", str(inventory), "--limit", PAIR, "--json", "--", "sh", "-c", span)
    results = json.loads(proc.stdout)["results"]
    assert proc.returncode == 0, proc.stderr
    assert [r["status"] for r in results] == ["ok", "ok"]
    (start1, end1), (start2, end2) = sorted(tuple(map(float, r["stdout"].split())) for r in results)
    assert start2 >= end1  # one at a time on node1: its limit is 1
    assert _accepted_logins(info, 0) - before == 1


def test_a_refused_channel_lowers_the_limit_and_the_calls_still_succeed(info):
    node = NodeConnection(info.nodes[0].name, info.nodes[0].address, options(info))
    before = _accepted_logins(info, 0)
    assert PctTarget(node, 200).run(["true"]).ok
    # Eight sessions held open on the same connection leave sshd (MaxSessions 10) two.
    transport = node._slots[0].conn.transport
    held = [transport.open_session(timeout=10) for _ in range(8)]
    results: list = []

    def call() -> None:
        results.append(PctTarget(node, 200).run(["sh", "-c", "sleep 0.5; echo done"]))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for channel in held:
        channel.close()
    assert [r.stdout for r in results] == [b"done\n"] * 4
    # At most the two sshd had left; less when a session we closed was not yet freed.
    assert 1 <= node.max_sessions <= 2
    assert node.connections_opened == 1
    assert _accepted_logins(info, 0) - before == 1
    node.close()
