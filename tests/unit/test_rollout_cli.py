"""`pctfleet rollout` end to end over a simulated fleet: when a batch stops it, what the
exit code and the JSON say, what --resume takes, the inventory it reads, its journal."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pctfleet import exitcodes
from pctfleet.cli.main import _invoke, app
from pctfleet.run import history, playbookrun
from pctfleet.run import rollout as rollout_module
from pctfleet.transport.base import NodeUnreachable
from pctfleet.transport.sim import SimTarget, build_sim_fleet
from tests.unit.test_flow import INVENTORY

# Two nodes of two containers, each with its letter `me`: spread order takes
# pve1/200 (a), pve2/200 (c), pve1/201 (b), pve2/201 (d).
ORDER = ["pve1/200", "pve2/200", "pve1/201", "pve2/201"]
BOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: reach
      command: echo hi
    - name: break
      fail: {msg: "broken {{ me }}"}
      when: me in (fail_on | default(''))
    - name: after
      command: echo after
"""


class Down(SimTarget):
    def _run(self, argv, stdin, timeout, sinks, *, read_only=False):  # noqa: ANN001, ANN202
        raise NodeUnreachable(self.node.name, "connection refused")


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    """The files of a rollout, a simulated fleet (`down`: unreachable keys) and the
    requests each batch ran."""
    (tmp_path / "inv.yml").write_text(INVENTORY)
    (tmp_path / "book.yml").write_text(BOOK)
    state = SimpleNamespace(down=set(), requests=[], dir=tmp_path, journals=tmp_path / "j")

    def factory(containers, connect):  # noqa: ANN001, ANN202, ARG001
        sim = build_sim_fleet(containers, latency=0.0)
        for index, target in enumerate(sim.targets):
            if target.name in state.down:
                sim.targets[index] = Down(target.node, target.ctid, 0.0)
        return sim

    execute = rollout_module.execute

    def recorded(prepared, *args):  # noqa: ANN001, ANN002, ANN202
        state.requests.append(prepared.request)
        return execute(prepared, *args)

    monkeypatch.setattr(playbookrun, "build_fleet", factory)
    monkeypatch.setattr(rollout_module, "execute", recorded)
    monkeypatch.chdir(tmp_path)
    return state


def rollout(fleet, *args: str, capsys, inventory: bool = True) -> tuple[int, list[dict], str]:
    """The exit code, the JSON events and stderr of `pctfleet rollout ARGS --json`."""
    where = ["-i", str(fleet.dir / "inv.yml")] if inventory else []
    journal = ["--journal-dir", str(fleet.journals)]
    code = _invoke(app, ["rollout", *args, *where, *journal, "--json"])
    out, err = capsys.readouterr()
    return code, [json.loads(x) for x in out.splitlines() if x.startswith("{")], err


def summary(events: list[dict]) -> dict:
    return next(e for e in events if e["kind"] == "summary")


def ran(events: list[dict]) -> list[str]:
    return [e["container"] for e in events if e["kind"] == "container"]


def tasks_run(events: list[dict], name: str) -> list[str]:
    return [e["container"] for e in events if e["kind"] == "task" and e["name"] == name]


def agrees(result: dict, code: int) -> None:
    """The JSON and the exit code tell one story."""
    assert result["exit_code"] == code
    assert result["completed"] is (code == exitcodes.OK)


# -- when a batch stops the rollout ------------------------------------------------------


def test_unreachable_canary_stops_the_rollout_with_the_defaults(fleet, capsys):
    fleet.down = set(ORDER)
    code, events, _ = rollout(fleet, "book.yml", "--no-gate", capsys=capsys)
    assert code == exitcodes.FAILED
    assert [e["batch"] for e in events if e["kind"] == "batch-start"] == [1]
    result = summary(events)
    assert result["failed"] == ["pve1/200"] and result["untouched"] == ORDER[1:]
    assert result["stopped"] == "batch 1: pve1/200 failed" and result["outcome"] == "stopped"
    agrees(result, code)


def test_any_failed_container_of_a_batch_stops_the_rollout_by_default(fleet, capsys):
    # Ansible would go on (not every host of the batch failed): a canary rollout does not.
    code, events, _ = rollout(
        fleet, "book.yml", "--no-gate", "--serial", "2", "-e", "fail_on=c", capsys=capsys
    )
    assert code == exitcodes.FAILED
    assert ran(events) == ORDER[:2]
    result = summary(events)
    assert (result["done"], result["failed"]) == (["pve1/200"], ["pve2/200"])
    assert result["untouched"] == ORDER[2:]
    agrees(result, code)


def test_max_fail_percent_goes_on_and_says_every_batch_ran_with_failures(fleet, capsys):
    args = ("book.yml", "--no-gate", "--serial", "2", "-e", "fail_on=c")
    code, events, _ = rollout(fleet, *args, "--max-fail-percent", "50", capsys=capsys)
    assert code == exitcodes.FAILED
    assert ran(events) == ORDER
    result = summary(events)
    assert result["failed"] == ["pve2/200"] and result["untouched"] == []
    assert (result["stopped"], result["outcome"]) == ("", "failures")
    agrees(result, code)


def test_a_batch_that_failed_whole_stops_even_under_max_fail_percent_100(fleet, capsys):
    args = ("book.yml", "--no-gate", "--serial", "2", "-e", "fail_on=ac")
    code, events, _ = rollout(fleet, *args, "--max-fail-percent", "100", capsys=capsys)
    assert code == exitcodes.FAILED
    result = summary(events)
    assert result["stopped"] == "batch 1: every container failed (pve1/200, pve2/200)"
    assert result["untouched"] == ORDER[2:]


def test_any_errors_fatal_ends_the_batch_at_the_first_failure(fleet, capsys):
    args = ("book.yml", "--no-gate", "--serial", "2", "-e", "fail_on=c")
    code, events, _ = rollout(fleet, *args, "--any-errors-fatal", capsys=capsys)
    assert code == exitcodes.FAILED
    assert tasks_run(events, "after") == []  # pve1/200 stopped with it
    result = summary(events)
    assert result["done"] == [] and sorted(result["failed"]) == ORDER[:2]
    assert result["stopped"] == "batch 1: pve2/200 failed (--any-errors-fatal)"
    assert result["untouched"] == ORDER[2:]


def test_a_rollout_without_failures_completes_with_exit_0(fleet, capsys):
    code, events, _ = rollout(fleet, "book.yml", "--no-gate", capsys=capsys)
    assert code == exitcodes.OK
    result = summary(events)
    assert result["done"] == ORDER and result["outcome"] == "completed"
    agrees(result, code)


# -- --resume --------------------------------------------------------------------------


def stopped_rollout(fleet, capsys) -> tuple[str, Path]:
    code, events, _ = rollout(fleet, "book.yml", "--no-gate", "-e", "fail_on=a", capsys=capsys)
    assert code == exitcodes.FAILED
    result = summary(events)
    return result["rollout_id"], Path(result["journal"])


def test_resume_refuses_what_it_would_ignore_and_changes_nothing(fleet, capsys):
    rollout_id, journal = stopped_rollout(fleet, capsys)
    before = journal.read_bytes()
    (fleet.dir / "other.yml").write_text(BOOK)
    code = _invoke(
        app,
        ["rollout", "other.yml", "--resume", rollout_id, "-i", "/nonexistent.yml",
         "-l", "nomatch", "--serial", "50%", "--order", "bogus", "--no-gate",
         "--journal-dir", str(fleet.journals)],
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == exitcodes.BAD_OPTIONS
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "drop PLAYBOOK, -i, --limit, --serial, --order, --no-gate" in err, err
    assert journal.read_bytes() == before


def test_resume_takes_e_and_forks_and_runs_what_is_left(fleet, capsys):
    rollout_id, journal = stopped_rollout(fleet, capsys)
    fleet.requests.clear()
    code, events, _ = rollout(
        fleet, "--resume", rollout_id, "-e", "fail_on=", "--forks", "3",
        capsys=capsys, inventory=False,
    )  # fmt: skip
    assert code == exitcodes.OK, events
    assert summary(events)["done"] == ORDER
    assert {request.forks for request in fleet.requests} == {3}
    resumed = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [r["pid"] for r in resumed if r["kind"] == "rollout-resume"] == [os.getpid()]


def test_an_unknown_resume_id_is_a_bad_option(fleet, capsys):
    code, _, err = rollout(fleet, "--resume", "nope", capsys=capsys, inventory=False)
    assert code == exitcodes.BAD_OPTIONS and "--resume nope: no rollout journal" in err


# -- what it reads, and bad command lines ----------------------------------------------


@pytest.mark.parametrize("old_journal", [False, True], ids=["journal", "one-path journal"])
def test_several_i_are_journaled_and_a_resume_reads_every_one(fleet, capsys, old_journal):
    (fleet.dir / "one.ini").write_text("[gpu]\na proxmox_vmid=200 ansible_host=192.0.2.10 me=a\n")
    (fleet.dir / "two.ini").write_text("[db]\nb proxmox_vmid=201 ansible_host=192.0.2.10 me=b\n")
    sources = ["-i", "one.ini", "-i", "two.ini"]
    code, events, _ = rollout(
        fleet, "book.yml", *sources, "--no-gate", "-e", "fail_on=a", capsys=capsys,
        inventory=False,
    )  # fmt: skip
    assert code == exitcodes.FAILED
    result = summary(events)
    assert result["untouched"] == ["192.0.2.10/201"]  # two.ini's host is in the rollout
    journal = Path(result["journal"])
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert records[0]["params"]["inventory"] == [
        str(fleet.dir / "one.ini"),
        str(fleet.dir / "two.ini"),
    ]
    if old_journal:  # written when a rollout read one -i: a path, not a list
        records[0]["params"]["inventory"] = str(fleet.dir / "two.ini")
        journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, events, _ = rollout(
        fleet, "--resume", result["rollout_id"], "-e", "fail_on=", capsys=capsys, inventory=False
    )
    assert code == exitcodes.OK, events
    assert ran(events) == (
        ["192.0.2.10/201"] if old_journal else ["192.0.2.10/200", "192.0.2.10/201"]
    )


@pytest.mark.parametrize("how", ["ansible.cfg", "ANSIBLE_INVENTORY"])
def test_without_i_it_reads_the_inventory_ansible_cfg_names(fleet, capsys, monkeypatch, how):
    inventory = fleet.dir / "inv.yml"
    if how == "ansible.cfg":
        (fleet.dir / "ansible.cfg").write_text(f"[defaults]\ninventory = {inventory}\n")
        monkeypatch.setenv("ANSIBLE_CONFIG", str(fleet.dir / "ansible.cfg"))
    else:
        monkeypatch.setenv("ANSIBLE_INVENTORY", str(inventory))
    code, events, _ = rollout(fleet, "book.yml", "--no-gate", capsys=capsys, inventory=False)
    assert code == exitcodes.OK and summary(events)["done"] == ORDER
    start = json.loads(Path(summary(events)["journal"]).read_text().splitlines()[0])
    assert start["inventory"] == str(inventory)  # what a resume reads again


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "error: rollout needs a PLAYBOOK (or --resume ID)"),
        (["book.yml"], "error: rollout needs -i INVENTORY (or 'inventory =' in ansible.cfg"),
        (["missing.yml"], "error: playbook not found: missing.yml"),
        (["book.yml", "--gate-checks", "server", "--no-gate"], "error: --no-gate runs no "),
        (["book.yml", "--gate-tests", "t.py", "--no-gate"], "drop --gate-tests"),
    ],
)
def test_bad_command_lines_are_one_line_exit_5_and_write_nothing(fleet, capsys, args, message):
    with_inventory = "--no-gate" in args
    code, _, err = rollout(fleet, *args, capsys=capsys, inventory=with_inventory)
    assert code == exitcodes.BAD_OPTIONS, err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not fleet.journals.exists() or not list(fleet.journals.iterdir())


def test_a_bad_order_is_refused_before_any_journal(fleet, capsys):
    code, _, err = rollout(fleet, "book.yml", "--order", "bogus", capsys=capsys)
    assert code == exitcodes.PARSE_ERROR and "--order: 'bogus'" in err
    assert not fleet.journals.exists() or not list(fleet.journals.iterdir())


def test_journal_dir_default_is_the_one_its_help_shows(fleet, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(fleet.dir))
    monkeypatch.setenv("COLUMNS", "300")
    assert _invoke(app, ["rollout", "--help"]) == exitcodes.OK
    shown = capsys.readouterr().out
    assert "[default: (~/.local/state/pctfleet/rollouts)]" in shown, shown
    code = _invoke(app, ["rollout", "book.yml", "-i", "inv.yml", "--no-gate", "--json"])
    assert code == exitcodes.OK
    journal = Path(
        summary([json.loads(x) for x in capsys.readouterr().out.splitlines()])["journal"]
    )
    assert journal.parent == fleet.dir / ".local/state/pctfleet/rollouts"


# -- the journal: a dead rollout reads as incomplete -------------------------------------


def never_wait(seconds: float) -> None:
    raise AssertionError("--follow waits for a journal that will never grow")


def test_the_journal_names_its_process_so_a_dead_rollout_reads_incomplete(
    fleet, capsys, monkeypatch
):
    rollout_id, journal = stopped_rollout(fleet, capsys)
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert (records[0]["command"], records[0]["pid"]) == ("rollout", os.getpid())
    unended = records[:-1]  # as if the process had been killed before its end record
    assert history.summarise(journal, unended).state == "running"  # this process: alive
    dead = [{**unended[0], "pid": 2**22 + 12345}, *unended[1:]]
    journal.write_text("".join(json.dumps(r) + "\n" for r in dead))
    assert history.summarise(journal, dead).state == "incomplete"
    monkeypatch.setattr(time, "sleep", never_wait)
    code = _invoke(
        app, ["runs", "show", rollout_id, "--follow", "--journal-dir", str(journal.parent)]
    )
    assert code == exitcodes.ERROR
    assert "stopped without an end record" in capsys.readouterr().err


# -- the health gate sees -e ---------------------------------------------------------------


def test_gate_checks_see_the_extra_vars_the_rollout_deployed(fleet, capsys, monkeypatch):
    from pctfleet.verify import runner

    seen = []

    def verify(request):  # noqa: ANN001, ANN202
        seen.append((request.keyword, request.extra_vars))
        results = [
            SimpleNamespace(container=c.key, status="passed", message="", checks=[])
            for c in request.containers
        ]
        return SimpleNamespace(containers=results)

    monkeypatch.setattr(runner, "run_verify", verify)
    args = ("book.yml", "--serial", "2", "--gate-checks", "server", "-e", "server_port=39100")
    code, events, _ = rollout(fleet, *args, capsys=capsys)
    assert code == exitcodes.OK, events
    assert seen and all(s == ("server", {"server_port": "39100"}) for s in seen), seen


def test_the_text_summary_says_what_the_exit_code_says(fleet, capsys):
    journal = ["--journal-dir", str(fleet.journals), "-i", "inv.yml", "--no-gate"]
    args = ["rollout", "book.yml", *journal, "--serial", "2", "-e", "fail_on=c"]
    assert _invoke(app, [*args, "--max-fail-percent", "50"]) == exitcodes.FAILED
    out = capsys.readouterr().out
    assert ": every batch ran; 1 failed (within --max-fail-percent)" in out, out
    assert "completed" not in out and "resume: pctfleet rollout --resume" in out
    assert _invoke(app, args) == exitcodes.FAILED
    out = capsys.readouterr().out
    assert ": stopped: batch 1: pve2/200 failed" in out, out


def test_a_container_no_play_matches_is_no_part_of_the_rollout(fleet, capsys):
    (fleet.dir / "node1.yml").write_text(BOOK.replace("hosts: all", "hosts: pve1"))
    code, events, _ = rollout(fleet, "node1.yml", "--no-gate", "--serial", "4", capsys=capsys)
    assert code == exitcodes.OK
    result = summary(events)
    assert result["done"] == ["pve1/200", "pve1/201"]  # pve2's: never counted done
    assert result["batches"] == [["pve1/200", "pve1/201"]] and result["untouched"] == []
    assert ran(events) == ["pve1/200", "pve1/201"]


def test_a_resume_from_another_folder_finds_the_playbook(fleet, capsys, monkeypatch, tmp_path):
    rollout_id, _ = stopped_rollout(fleet, capsys)  # book.yml named relative to tmp_path
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, events, err = rollout(
        fleet, "--resume", rollout_id, "-e", "fail_on=", capsys=capsys, inventory=False
    )
    assert code == exitcodes.OK, err
    assert summary(events)["done"] == ORDER
