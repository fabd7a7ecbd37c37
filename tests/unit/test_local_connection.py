"""`--connection local` / `--local`: the same commands on this machine, no SSH, no pct."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.inventory.local import LocalNode, local_inventory
from pctfleet.transport.connections import build_fleet
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.options import ConnectOptions
from pctfleet.verify.runner import VerifyRequest, _specs, pytest_args

PLAYBOOK = """\
- name: files on this machine
  hosts: gpu            # no such group here: under --local every play runs on localhost
  defaults:
    dest: {dest}
  tasks:
    - name: folder
      file: {{path: "{{{{ dest }}}}", state: directory}}
    - name: a file naming the host
      copy:
        dest: "{{{{ dest }}}}/host.txt"
        content: "{{{{ inventory_hostname }}}} {{{{ ct_name }}}} {{{{ node_name }}}}\\n"
    - name: a line
      lineinfile: {{path: "{{{{ dest }}}}/lines.txt", line: second, create: true}}
"""


def pctfleet(*args: str, program: str = "pctfleet") -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pctfleet", *args]
    if program == "provision":  # the provision program is `pctfleet provision`
        argv = [sys.executable, "-m", "pctfleet", "provision", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def test_the_local_inventory_is_one_host_every_play_selects():
    inventory = local_inventory()
    (host,) = inventory.containers
    assert (host.node.name, host.ctid, host.name, host.key) == ("local", 0, "localhost", "local/0")
    assert inventory.select("gpu") == [host] and inventory.select(None) == [host]
    variables = inventory.vars_for(host, {"venv": "/opt/v"})
    assert variables["venv"] == "/opt/v" and variables["ct_name"] == "localhost"


def test_the_local_host_gets_a_local_target_with_the_command_timeout():
    inventory = local_inventory()
    fleet = build_fleet(inventory.containers, ConnectOptions(command_timeout=7.0))
    (target,) = fleet.targets
    assert isinstance(target, LocalTarget)
    assert (target.name, target.timeout) == ("local/0", 7.0)
    fleet.close()


def test_verify_asks_testinfra_local_backend_with_the_settings_as_options():
    inventory = local_inventory()
    request = VerifyRequest(
        inventory, inventory.containers, ConnectOptions(), extra_vars={"venv": "/opt/x"}
    )
    specs, settings = _specs(request)
    assert specs == ["local://"]
    assert "--pct-venv=/opt/x" in settings
    args = pytest_args(request, specs, settings)
    assert "--hosts=local://" in args and "--pct-venv=/opt/x" in args
    assert isinstance(inventory.containers[0].node, LocalNode)


@pytest.mark.parametrize(
    "args, named",
    [
        (["run", "pb.yml", "--local", "-i", "inv.yml"], "-i"),
        (["run", "pb.yml", "--connection", "local", "--host", "h", "--ct", "200"], "--host, --ct"),
        (["audit", "--local", "--limit", "gpu"], "--limit"),
        (["verify", "--local", "-i", "inv.yml"], "-i"),
        (["doctor", "--local", "--host", "h", "--ct", "200"], "--host, --ct"),
        (["provision", "--local", "-i", "inv.yml"], "-i"),
    ],
)
def test_an_inventory_or_container_with_local_is_refused_in_one_line(args, named, tmp_path):
    (tmp_path / "pb.yml").write_text("- hosts: all\n  tasks: []\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pctfleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == exitcodes.BAD_OPTIONS, proc.stderr
    assert f"--connection local works on this machine only: drop {named}" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_an_unknown_connection_is_refused(tmp_path):
    (tmp_path / "pb.yml").write_text("- hosts: all\n  tasks: []\n")
    proc = pctfleet("run", str(tmp_path / "pb.yml"), "--connection", "winrm")
    assert proc.returncode == exitcodes.BAD_OPTIONS
    assert "--connection: 'winrm' is not one of ssh, local" in proc.stderr


def _run_json(*args: str) -> dict:
    proc = pctfleet(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_run_local_writes_here_then_converges_in_one_call(tmp_path):
    dest = tmp_path / "out"
    playbook = tmp_path / "pb.yml"
    playbook.write_text(PLAYBOOK.format(dest=dest))
    journal = ["--journal-dir", str(tmp_path / "journal"), "--json"]
    first = _run_json("run", str(playbook), "--local", *journal)
    assert (dest / "host.txt").read_text() == "local/0 localhost local\n"
    assert (dest / "lines.txt").read_text() == "second\n"
    (row,) = first["containers"]
    assert (row["node"], row["ctid"], row["name"], row["status"]) == (
        "local",
        0,
        "localhost",
        "changed",
    )
    assert row["stats"]["changed"] == 3
    again = _run_json("run", str(playbook), "--connection", "local", *journal)
    (row,) = again["containers"]
    assert (row["status"], row["remote_calls"], row["stats"]["changed"]) == ("ok", 1, 0)
    assert again["summary"]["changed"] == 0
    records = [json.loads(line) for line in Path(again["journal"]).read_text().splitlines()]
    assert {r.get("container") for r in records if r.get("container")} == {"local/0"}


def test_provision_local_check_on_a_fake_venv_touches_nothing(tmp_path):
    venv = tmp_path / "fake" / "venv"
    venv.parent.mkdir()
    before = sorted(tmp_path.rglob("*"))
    proc = pctfleet(
        "--local",
        "--check",
        "-e",
        f"venv={venv}",
        "-e",
        f"server_env_file={tmp_path}/etc/sglang.env",
        "--json",
        "--journal-dir",
        str(tmp_path / "journal"),
        program="provision",
    )
    assert proc.returncode in (exitcodes.OK, exitcodes.FAILED), proc.stderr
    document = json.loads(proc.stdout)
    (row,) = document["containers"]
    assert row["remote_calls"] == 1  # check mode reads facts once and changes nothing
    assert any(task["status"] == "changed" for task in row["tasks"])  # would change
    after = sorted(p for p in tmp_path.rglob("*") if "journal" not in p.parts)
    assert after == before


def test_verify_local_judges_this_machine_through_testinfra(tmp_path):
    venv = tmp_path / "venv"
    proc = pctfleet("verify", "--local", "-e", f"venv={venv}", "-k", "links", "--json")
    assert proc.returncode == exitcodes.ERROR, proc.stderr  # no toolchain here: links fail
    (row,) = json.loads(proc.stdout)["containers"]
    assert row["container"] == "local/0" and row["status"] == "failed"
    (check,) = row["checks"]
    assert check["id"] == "test_links_resolve" and str(venv) in check["message"]
