"""Options and outputs that must do what they say: `report -e` reaches doctor's rules,
the page's cost is measured, `run --json` lists only containers a play ran on (with
real times), contradictory pairs of options are refused, and `connections --close`
reports what it closed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.report import gather
from tests.clirun import invoke

NO_SSHD = "127.0.13.99"  # nothing listens there

INVENTORY = f"""\
nodes:
  pve1:
    address: {NO_SSHD}
    containers:
      200: {{name: a}}
      201: {{name: b}}
groups:
  g1:
    containers: [pve1/200]
"""

ONE_TASK = """\
- hosts: {hosts}
  tasks:
    - name: say
      debug: {{msg: hi}}
"""


@pytest.fixture
def no_login(monkeypatch):
    """Every SSH login is recorded and refused: a simulated fleet stands in for the nodes."""
    from pctfleet.run import playbookrun
    from pctfleet.transport import connections, ssh
    from pctfleet.transport.base import NodeUnreachable
    from pctfleet.transport.sim import build_sim_fleet

    attempts: list[str] = []

    def login(self):  # noqa: ANN001, ANN202
        attempts.append(self.address)
        raise NodeUnreachable(self.node, "refused by the test")

    monkeypatch.setattr(ssh.NodeConnection, "_connect", login)
    monkeypatch.setattr(connections, "start_logins", lambda containers, options: 0)
    monkeypatch.setattr(playbookrun, "build_fleet", lambda cs, _: build_sim_fleet(cs, latency=0))
    return attempts


# -- run --json: a container no play matched is no part of the run ---------------------------


def test_run_lists_only_containers_a_play_ran_on(tmp_path, no_login):
    (tmp_path / "inv.yml").write_text(INVENTORY)
    (tmp_path / "pb.yml").write_text(ONE_TASK.format(hosts="g1"))
    common = ("-i", str(tmp_path / "inv.yml"), "--journal-dir", str(tmp_path / "j"))
    code, out, err = invoke("run", str(tmp_path / "pb.yml"), *common, "--json")
    assert code == exitcodes.OK, err
    document = json.loads(out)
    (row,) = document["containers"]  # pve1/201 (b) is in no play's hosts
    assert (row["node"], row["ctid"], row["status"]) == ("pve1", 200, "ok")
    assert 0 < row["started_at"] <= row["finished_at"]
    assert document["summary"]["containers"] == 1 and document["summary"]["ok"] == 1
    records = [json.loads(line) for line in Path(document["journal"]).read_text().splitlines()]
    assert records[0]["containers"] == ["pve1/200"]
    assert records[-1]["kind"] == "end" and records[-1]["summary"] == document["summary"]
    assert "pve1/201" not in Path(document["journal"]).read_text()
    assert "on 1 container(s)" in err
    code, out, err = invoke("run", str(tmp_path / "pb.yml"), *common)  # the recap table
    assert code == exitcodes.OK and "pve1/200" in err + out and "pve1/201" not in err + out
    assert no_login == []


def test_a_container_that_never_started_has_no_times(tmp_path, no_login):
    """A stopped run's later play never reached pve1/201: untouched, and its times are
    null, not 0.0 (the epoch)."""
    (tmp_path / "inv.yml").write_text(INVENTORY)
    book = textwrap.dedent("""\
        - hosts: g1
          tasks:
            - fail: {msg: broken}
        - hosts: all
          tasks:
            - debug: {msg: never}
        """)
    (tmp_path / "pb.yml").write_text(book)
    args = ("-i", str(tmp_path / "inv.yml"), "--journal-dir", str(tmp_path / "j"), "--json")
    code, out, err = invoke("run", str(tmp_path / "pb.yml"), *args)
    assert code == exitcodes.FAILED, err
    rows = {r["ctid"]: r for r in json.loads(out)["containers"]}
    assert rows[201]["status"] == "untouched"
    assert rows[201]["started_at"] is None and rows[201]["finished_at"] is None
    assert isinstance(rows[200]["started_at"], float)


# -- report -e: the doctor judges with the same vars as the audit ----------------------------


def test_report_extra_vars_reach_the_doctors_rules(tmp_path, monkeypatch):
    judged: dict = {}
    real = gather.diagnoses

    def diagnoses(runs, variables):  # noqa: ANN001, ANN202
        judged["vars"] = variables
        judged["found"] = real(runs, variables)
        return judged["found"]

    monkeypatch.setattr(gather, "diagnoses", diagnoses)
    (tmp_path / "pb.yml").write_text(ONE_TASK.format(hosts="all"))
    code, _, err = invoke(
        "report", "--local", "-p", str(tmp_path / "pb.yml"), "--no-verify",
        "-e", "gpu_arch=sm_90", "-e", "gpus=0,1",
        "--markdown", str(tmp_path / "page.md"), "--journal-dir", str(tmp_path / "j"),
        "--baseline-file", str(tmp_path / "baseline.json"),
    )  # fmt: skip
    assert code in (exitcodes.OK, exitcodes.FAILED, exitcodes.ERROR), err
    assert judged["found"]["local/0"].arch == "sm_90"  # the GPU's (or sm_120) without -e
    assert judged["vars"]["local/0"]["gpus"] == "0,1"  # what the GPU rules read


def test_the_pages_cost_counts_verify_as_measured():
    audits = [{"container": "n/200", "remote_calls": 1}, {"container": "n/201", "remote_calls": 2}]
    counted = gather.Inputs(audits, verified=[{"container": "n/200", "remote_calls": 3}])
    cost = gather.cost(counted)
    assert (cost["audit"], cost["verify"]) == (2, 3)
    assert cost["text"].startswith("5 pct exec(s) per container at most (audit 2, verify 3,")
    assert gather.cost(gather.Inputs(audits))["verify"] == 0  # --no-verify: none sent
    uncounted = gather.cost(gather.Inputs(audits, verified=[{"container": "n/200"}]))
    assert uncounted["verify"] is None and "verify's not counted" in uncounted["text"]
    assert uncounted["text"].startswith("2 pct exec(s)")


# -- pairs that cannot both hold: one line, exit 5, nothing done -----------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "pb.yml", "--local", "--connection", "ssh"],
         "--local means --connection local: give it or --connection ssh, not both"),
        (["doctor", "--connection", "ssh", "--local"],
         "--local means --connection local: give it or --connection ssh, not both"),
        (["inventory", "discover", "--host", NO_SSHD, "--json", "--yaml"],
         "--json and --yaml both print on stdout: give one"),
        (["report", "--local", "--html", "-", "--markdown", "-"],
         "--html and --markdown both write to stdout: give each its own place"),
        (["report", "--local", "--html", "page", "--markdown", "./page"],
         "--html and --markdown both write to page: give each its own place"),
    ],
)  # fmt: skip
def test_contradicting_options_are_refused_in_one_line(args, said, tmp_path, monkeypatch):
    from pctfleet.inventory import discover

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pb.yml").write_text(ONE_TASK.format(hosts="all"))
    asked: list = []
    monkeypatch.setattr(discover, "read_node", lambda node, options: asked.append(node))
    code, out, err = invoke(*args)
    assert code == exitcodes.BAD_OPTIONS, err
    assert err == f"error: {said}\n" and out == ""
    assert asked == [] and sorted(p.name for p in tmp_path.iterdir()) == ["pb.yml"]


def test_local_with_connection_local_is_no_contradiction(tmp_path):
    (tmp_path / "pb.yml").write_text(ONE_TASK.format(hosts="all"))
    args = ("--local", "--connection", "local", "--journal-dir", str(tmp_path / "j"), "--json")
    code, out, err = invoke("run", str(tmp_path / "pb.yml"), *args)
    assert code == exitcodes.OK, err
    assert [r["name"] for r in json.loads(out)["containers"]] == ["localhost"]


# -- connections --close: what was closed, not what was asked --------------------------------


def test_close_counts_only_the_logins_of_keepers_that_ended(monkeypatch, tmp_path):
    from pctfleet.cli import connections
    from pctfleet.transport import keep

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    answers = {
        tmp_path / "a.sock": {"pid": ended.pid, "kept": [{"node": "n1"}, {"node": "n2"}]},
        tmp_path / "b.sock": {"pid": stuck.pid, "kept": [{"node": "n3"}]},
    }
    monkeypatch.setattr(keep, "keeper_sockets", lambda: list(answers))
    monkeypatch.setattr(keep, "keeper_socket", lambda: tmp_path / "a.sock")
    monkeypatch.setattr(keep, "ask", lambda path, kind, request, timeout: answers[path])
    monkeypatch.setattr(connections, "ENDED_WITHIN", 0.3)
    try:
        code, out, err = invoke("connections", "--close", "--json")
        listed = invoke("connections", "--json")
    finally:
        stuck.kill()  # started here, ended by its PID
        stuck.wait()
    assert code == exitcodes.OK
    document = json.loads(out)
    assert len(document["kept"]) == 3 and document["closed"] == 2  # n3's keeper is still up
    assert f"keeper {stuck.pid} took --close but has not ended" in err
    assert json.loads(listed[1])["closed"] == 0  # nothing asked to close, nothing closed
