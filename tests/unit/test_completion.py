"""Shell completion of --limit, --host and --ct from the inventory on the line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pctfleet.cli import main as cli

INVENTORY = """\
nodes:
  pve1:
    address: 10.1.2.6
    containers:
      200: {name: web}
      201: {name: gpu-a}
  pve2:
    address: 10.1.2.7
    containers:
      300: {name: gpu-b}
groups:
  gpus:
    containers: [pve1/201, pve2/300]
"""


def complete(line: str) -> list[str]:
    words = line.split(" ")
    env = {
        "_PCTFLEET_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(words) - 1),
    }
    result = CliRunner().invoke(cli.app, words[1:], prog_name="pctfleet", env=env)
    assert result.exit_code == 0, result.output
    return result.output.split()


@pytest.fixture
def inv(tmp_path):
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY)
    return path


def test_limit_completes_groups_names_and_keys(inv):
    assert complete(f"pctfleet audit -i {inv} --limit gp") == ["gpus", "gpu-a", "gpu-b"]
    assert complete(f"pctfleet run site.yml -i {inv} -l gpus:!pve1/") == [
        "gpus:!pve1/200",
        "gpus:!pve1/201",
    ]


def test_host_and_ct_complete_addresses_and_that_nodes_ids(inv):
    assert complete(f"pctfleet doctor -i {inv} --host 10.1.2.") == ["10.1.2.6", "10.1.2.7"]
    assert complete(f"pctfleet exec -i {inv} --host 10.1.2.7 --ct ") == ["300"]
    assert complete(f"pctfleet exec -i {inv} --host pve1 --ct 200,") == ["200,200", "200,201"]


@pytest.mark.parametrize("text", ["nodes: [", "nodes:\n  pve1: {address: 10.1.2.6, x: 1}\n"])
def test_a_broken_inventory_completes_nothing(tmp_path, text):
    bad = tmp_path / "bad.yml"
    bad.write_text(text)
    assert complete(f"pctfleet audit -i {bad} --limit p") == []
    assert complete(f"pctfleet audit -i {tmp_path / 'none.yml'} --limit p") == []


def test_limit_completes_from_every_i_on_the_line(tmp_path):
    (tmp_path / "one.ini").write_text("[gpu]\na proxmox_vmid=200 ansible_host=192.0.2.10\n")
    (tmp_path / "two.ini").write_text("[db]\nb proxmox_vmid=201 ansible_host=192.0.2.10\n")
    line = f"pctfleet exec -i {tmp_path / 'one.ini'} -i {tmp_path / 'two.ini'} --limit "
    assert {"gpu", "db", "a", "b"} <= set(complete(line))
