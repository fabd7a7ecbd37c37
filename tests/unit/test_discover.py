"""Reading containers from `pct list` / `pct config` output (pve-container's formats)."""

from __future__ import annotations

import json

import pytest

from pctfleet.inventory.discover import (
    MARK,
    UNREADABLE,
    Rule,
    discovery_command,
    parse_discovery,
    parse_pct_config,
    parse_pct_list,
)
from pctfleet.lab import pct as shim

# pve-container: printf("%-10s %-10s %-12s %-20s\n", vmid, status, lock, name)
PCT_LIST = (
    "VMID       Status     Lock         Name                \n"
    "200        running                 gpu-a               \n"
    "201        stopped    backup       gpu-b               \n"
    "305        running                 a-hostname-longer-than-twenty-chars\n"
)
# pve-container: sorted keys without digest/lxc, then the raw lxc lines in order.
PCT_CONFIG = """\
arch: amd64
cores: 8
dev0: /dev/nvidia0,gid=44
features: nesting=1
hostname: gpu-a
memory: 65536
mp0: /srv/models,mp=/models
net0: name=eth0,bridge=vmbr0,ip=dhcp,type=veth
ostype: debian
rootfs: local-lvm:vm-200-disk-0,size=64G
tags: gpu;prod
lxc.cgroup2.devices.allow: c 195:* rwm
lxc.cgroup2.devices.allow: c 509:* rwm
lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file
"""


def test_pct_list_rows_with_and_without_lock():
    assert parse_pct_list(PCT_LIST) == [
        (200, "running", "", "gpu-a"),
        (201, "stopped", "backup", "gpu-b"),
        (305, "running", "", "a-hostname-longer-than-twenty-chars"),
    ]


def test_pct_list_prints_nothing_for_no_containers():
    assert parse_pct_list("") == []


@pytest.mark.parametrize("text", ["VMID Name\n200 x\n", PCT_LIST + "garbage\n"])
def test_pct_list_in_another_shape_is_refused_not_read_as_empty(text):
    with pytest.raises(ValueError, match="unexpected pct list"):
        parse_pct_list(text)


def test_pct_config_keeps_repeated_lxc_lines_in_order():
    pairs = parse_pct_config(PCT_CONFIG)
    assert pairs[0] == ("arch", "amd64")
    assert [v for k, v in pairs if k == "lxc.cgroup2.devices.allow"] == [
        "c 195:* rwm",
        "c 509:* rwm",
    ]


def _output(*configs: tuple[int, str]) -> str:
    return PCT_LIST + "".join(f"{MARK} {ctid}\n{text}" for ctid, text in configs)


def test_discovery_output_gives_tags_devices_and_mounts():
    out = _output((200, PCT_CONFIG), (201, "hostname: gpu-b\n"), (305, "cores: 2\n"))
    found = {ct.ctid: ct.as_json() for ct in parse_discovery(out)}
    a = found[200]
    assert (a["name"], a["status"], a["tags"], a["ostype"]) == (
        "gpu-a",
        "running",
        ["gpu", "prod"],
        "debian",
    )
    assert (a["cores"], a["memory"]) == (8, 65536)
    assert a["devices"] == [
        "dev0: /dev/nvidia0,gid=44",
        "lxc.cgroup2.devices.allow: c 195:* rwm",
        "lxc.cgroup2.devices.allow: c 509:* rwm",
    ]
    assert a["mounts"][0] == "mp0: /srv/models,mp=/models"
    assert a["mounts"][-1].startswith("lxc.mount.entry: /dev/nvidia-uvm")
    assert found[201]["lock"] == "backup" and found[201]["tags"] == []
    assert found[305]["name"] == "a-hostname-longer-than-twenty-chars"


def test_config_text_stays_data():
    out = (
        PCT_LIST.splitlines(True)[0]
        + "200 running x\n"
        + f"{MARK} 200\nhostname: {{{{ x }}}}\ndescription: [red]hi[/red]\n"
    )
    (ct,) = parse_discovery(out)
    assert ct.name == "{{ x }}" and ct.value("description") == "[red]hi[/red]"


def test_a_config_that_failed_makes_the_node_unreadable():
    out = _output(
        (200, PCT_CONFIG),
        (201, f"Configuration file 'nodes/pve1/lxc/201.conf' does not exist\n{UNREADABLE} 201\n"),
    )
    with pytest.raises(ValueError, match="pct config 201 failed: Configuration file"):
        parse_discovery(out)


def test_a_listed_container_without_config_is_an_error():
    with pytest.raises(ValueError, match="no pct config for CT 201"):
        parse_discovery(_output((200, PCT_CONFIG)))


def test_rule_needs_every_tag_and_the_status():
    (a, b, _) = parse_discovery(_output((200, PCT_CONFIG), (201, "tags: gpu\n"), (305, "")))
    assert Rule(("gpu",), "running").matches(a)
    assert not Rule(("gpu",), "running").matches(b)
    assert Rule(("gpu",)).matches(b) and not Rule(("gpu", "prod")).matches(b)


def test_discovery_command_only_reads():
    cmd = discovery_command()
    assert "pct list" in cmd and 'pct config "$id"' in cmd
    for verb in ("set", "start", "stop", "destroy", "create", "exec"):
        assert f"pct {verb}" not in cmd
    assert "sudo -n pct list" in discovery_command(sudo=True)


def test_lab_shim_prints_config_like_pve(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "pve/nodes/n1/lxc/250.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(
        "#comment\nlxc.mount.entry: /a a none bind\nhostname: x\ntags: gpu;prod\n"
        "lxc.mount.entry: /b b none bind\narch: amd64\n[snap1]\nhostname: old\n"
    )
    node_json = tmp_path / "node.json"
    node_json.write_text(
        json.dumps(
            {"node": "n1", "index": 1, "lxcpath": str(tmp_path), "pve": str(tmp_path / "pve")}
        )
    )
    monkeypatch.setenv("PCTFLEET_LAB_NODE", str(node_json))
    assert shim.main(["config", "250"]) == 0
    assert capsys.readouterr().out == (
        "arch: amd64\nhostname: x\ntags: gpu;prod\n"
        "lxc.mount.entry: /a a none bind\nlxc.mount.entry: /b b none bind\n"
    )


DISCOVERING = """\
nodes:
  pve1:
    address: 127.0.0.1
    discover: {tags: [gpu], status: running}
  pve2:
    containers: [300]
groups:
  serving:
    nodes: [pve1]
  canary:
    containers: [gpu-a]
"""


def _found():
    return parse_discovery(_output((200, PCT_CONFIG), (201, "tags: gpu\n"), (305, "tags: cpu\n")))


def test_discover_rule_is_resolved_with_groups_and_limit():
    from pctfleet.inventory import inventory_from_text
    from pctfleet.inventory.native import parse_native

    pending = inventory_from_text(DISCOVERING, "inv.yml")
    assert pending.discovery is not None and [c.key for c in pending.containers] == ["pve2/300"]
    inv = parse_native(pending.discovery.doc, pending.discovery.src, {"pve1": _found()})
    assert inv.discovery is None
    assert [c.key for c in inv.containers] == ["pve1/200", "pve2/300"]  # 201 stopped, 305 cpu
    assert [c.label for c in inv.select("serving")] == ["gpu-a"]
    assert [c.key for c in inv.select("canary,pve2")] == ["pve1/200", "pve2/300"]


def test_a_node_that_cannot_be_read_stops_resolution(monkeypatch):
    from pctfleet.inventory import inventory_from_text, load
    from pctfleet.inventory.discover import DiscoveryError, NodeFound

    pending = inventory_from_text(DISCOVERING, "inv.yml")
    monkeypatch.setattr(
        load,
        "read_nodes",
        lambda nodes, *_: [NodeFound(n, error="pct list failed (exit 255): boom") for n in nodes],
    )
    with pytest.raises(
        DiscoveryError, match=r"node pve1 \(127.0.0.1\): pct list failed \(exit 255\): boom"
    ):
        load.resolve_discovery(pending)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("{status: paused}", "'status' must be one of running, stopped, got 'paused'"),
        ("{tags: gpu}", "'tags' must be a list of tag names"),
        ("{tag: [gpu]}", "unknown key 'tag'"),
    ],
)
def test_bad_discover_rules_name_the_line(rule, message):
    from pctfleet.errors import InventoryError
    from pctfleet.inventory import inventory_from_text

    with pytest.raises(InventoryError, match="inv.yml:") as err:
        inventory_from_text(f"nodes:\n  pve1:\n    discover: {rule}\n", "inv.yml")
    assert message in str(err.value)


def test_containers_and_discover_together_are_refused():
    from pctfleet.errors import InventoryError
    from pctfleet.inventory import inventory_from_text

    with pytest.raises(InventoryError, match="either 'containers' or 'discover'"):
        inventory_from_text("nodes:\n  pve1:\n    containers: [200]\n    discover: {}\n", "inv.yml")


def test_fleet_drift_unmanaged_missing_and_unreadable():
    from pctfleet.inventory import inventory_from_text
    from pctfleet.inventory.discover import NodeFound, fleet_drift

    inv = inventory_from_text(
        "nodes:\n  pve1: {containers: [200, 299]}\n  pve2: {containers: [300]}\n"
        "  pve3: {discover: {tags: [gpu]}}\n",
        "inv.yml",
    )
    pve1, pve2, pve3 = inv.nodes.values()
    found = [
        NodeFound(pve1, _found()),  # holds 200, 201, 305; the inventory lists 200, 299
        NodeFound(pve2, error="pct list failed (exit 255): boom"),
        NodeFound(pve3, _found()),  # discovery: what the rule leaves out is not drift
    ]
    items = {
        (i.node, i.ctid, i.kind)
        for i in fleet_drift(inv.containers, inv.containers, found, inv.rules)
    }
    assert items == {
        ("pve1", 201, "unmanaged"),
        ("pve1", 305, "unmanaged"),
        ("pve1", 299, "missing"),
        ("pve2", None, "unreadable"),
    }


def test_yaml_output_is_a_native_inventory_of_what_was_found():
    import yaml

    from pctfleet.cli.inventory import native_inventory
    from pctfleet.inventory import inventory_from_text
    from pctfleet.inventory.discover import NodeFound, as_rows
    from pctfleet.inventory.model import Node

    found = [NodeFound(Node("pve1", "10.1.2.6", port=2222), _found())]
    found.append(NodeFound(Node("pve2", "10.1.2.7"), _found()))
    text = yaml.safe_dump(native_inventory(found, as_rows(found, Rule(("gpu",)))))
    inv = inventory_from_text(text, "discovered.yml")
    assert [(c.key, c.name) for c in inv.containers] == [
        ("pve1/200", "gpu-a"),
        ("pve1/201", "gpu-b"),
        ("pve2/200", None),  # the host name is taken: known by its key
        ("pve2/201", None),
    ]
    assert inv.nodes["pve1"].port == 2222 and inv.nodes["pve2"].port == 22


def test_bad_status_is_one_line_and_exit_5():
    from typer.testing import CliRunner

    from pctfleet.cli.main import app

    result = CliRunner().invoke(app, ["inventory", "discover", "--host", "h", "--status", "up"])
    assert result.exit_code == 5
    assert "--status: status must be one of running, stopped, got 'up'" in result.output


@pytest.mark.parametrize("forks", [None, 1, 3])
def test_nodes_are_read_with_or_without_a_forks_cap(monkeypatch, forks):
    from pctfleet.inventory import discover

    read = []
    monkeypatch.setattr(discover, "read_node", lambda node, options: read.append(node) or node)
    assert discover.read_nodes(["a", "b", "c"], None, forks) == ["a", "b", "c"]
    assert sorted(read) == ["a", "b", "c"]


class _TalkingNode:
    """A node whose root's ~/.bashrc prints on stderr ahead of what pct says."""

    target = type("Target", (), {"user": "pctfleet"})()

    def __init__(self, pct_said: str) -> None:
        self.pct_said = pct_said

    def exec(self, command, *, stdin, timeout, stdout, stderr):  # noqa: ANN001, ANN201
        stderr.write(b"mesg: ttyname failed: Inappropriate ioctl for device\n")
        stderr.write(self.pct_said.encode())
        return 1, 0.1

    def hand_over(self) -> None:
        pass


@pytest.mark.parametrize(
    "pct_said, error",
    [
        ("ipcc_send_rec[1] failed: Unknown error -1\n", "pct list failed (exit 1): ipcc_send_rec"),
        ("sudo: a password is required\n", "sudo asks pctfleet for a password"),
    ],
)
def test_a_failed_node_read_reports_pct_past_a_greeting(monkeypatch, pct_said, error):
    from pctfleet.inventory import discover
    from pctfleet.inventory.model import Node
    from pctfleet.transport import connections

    monkeypatch.setattr(connections, "node_connection", lambda n, o: _TalkingNode(pct_said))
    found = discover.read_node(Node("pve1", "127.0.0.1"), None)
    assert found.error.startswith(error), found.error
