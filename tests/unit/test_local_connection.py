"""`--connection local` / `--local`: the same commands on this machine, no SSH, no pct."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.inventory.local import LocalNode, local_inventory
from pctfleet.transport.connections import build_fleet
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.options import ConnectOptions
from pctfleet.verify.runner import VerifyRequest, _specs, pytest_args
from tests.clirun import invoke

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


def test_verify_asks_the_local_backend_with_the_settings_as_options():
    inventory = local_inventory()
    request = VerifyRequest(
        inventory, inventory.containers, ConnectOptions(), extra_vars={"venv": "/opt/x"}
    )
    specs, settings = _specs(request)
    assert specs == ["pctfleet-local://?timeout=600.0"]  # --timeout's default
    assert "--pct-venv=/opt/x" in settings
    args = pytest_args(request, specs, settings)
    assert f"--hosts={specs[0]}" in args and "--pct-venv=/opt/x" in args
    assert isinstance(inventory.containers[0].node, LocalNode)


def test_verify_local_holds_each_command_to_the_timeout():
    """`verify --local --timeout 1`: the host verify's child gets stops a 3 s command
    after 1 s, and the container reads `timeout`, as a pct:// host would."""
    import testinfra

    from pctfleet.verify import backend

    inventory = local_inventory()
    request = VerifyRequest(inventory, inventory.containers, ConnectOptions(command_timeout=1.0))
    (spec,), _ = _specs(request)
    host = testinfra.get_host(spec)
    assert host.backend.get_pytest_id() == "local" and host.run("echo hi").stdout == "hi\n"
    started = time.monotonic()
    with pytest.raises(backend.ContainerUnavailable) as caught:
        host.run("sleep 3")
    assert time.monotonic() - started < 2.5
    assert caught.value.status == "timeout" and "within 1s" in str(caught.value)


def test_a_bad_local_timeout_in_a_url_is_one_usage_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", "/dev/null",
         "--hosts=pctfleet-local://?timeout=soon", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "timeout='soon' is not a number" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.fixture
def no_nodes(monkeypatch, tmp_path):
    """Every SSH login, node discovery or `pct` run is recorded (and refused): --local
    promises none. A `pct` first on PATH writes down that it ran."""
    from pctfleet.inventory import discover
    from pctfleet.transport import ssh
    from pctfleet.transport.base import NodeUnreachable

    attempts: list[str] = []

    def login(self):  # noqa: ANN001, ANN202
        attempts.append(f"ssh {self.address}")
        raise NodeUnreachable(self.node, "refused by the test")

    def read_node(node, options):  # noqa: ANN001, ANN202, ARG001
        attempts.append(f"discovery on {node.name}")
        return discover.NodeFound(node, error="refused by the test")

    monkeypatch.setattr(ssh.NodeConnection, "_connect", login)
    monkeypatch.setattr(discover, "read_node", read_node)
    bin_dir, ran = tmp_path / "bin", tmp_path / "pct-ran"
    bin_dir.mkdir()
    (bin_dir / "pct").write_text(f'#!/bin/sh\necho "$@" >> {ran}\nexit 1\n')
    (bin_dir / "pct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    yield attempts
    if ran.exists():
        attempts.append(f"pct {ran.read_text().strip()}")


def test_doctor_local_judges_this_machine_with_no_login_and_no_pct(no_nodes, tmp_path):
    from pctfleet.cuda.doctor import run_doctor

    inventory = local_inventory()
    overrides = {"venv": str(tmp_path / "venv"), "run_probe": False}
    (diagnosis,) = run_doctor(inventory, inventory.containers, ConnectOptions(), overrides, None)
    assert diagnosis.container == "local/0" and diagnosis.host is None
    assert diagnosis.remote_calls == 1  # the one read, on this machine
    assert no_nodes == []


def test_doctor_local_on_the_command_line_logs_in_nowhere(no_nodes, tmp_path):
    code, out, err = invoke("doctor", "--local", "--no-probe", "--json", "--venv", str(tmp_path))
    assert code in (exitcodes.OK, exitcodes.FAILED), err  # healthy, or a problem found here
    (row,) = json.loads(out)["containers"]
    assert row["container"] == "local/0" and row["status"] in ("ok", "problem")
    assert "node" not in row  # no node was read
    assert no_nodes == []


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
    # inventory_hostname is localhost, as with ansible-playbook -c local -i localhost,
    assert (dest / "host.txt").read_text() == "localhost localhost local\n"
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
    assert row["remote_calls"] == 1  # the facts, read once; counted by the child's backend
    (check,) = row["checks"]
    assert check["id"] == "test_links_resolve" and str(venv) in check["message"]
