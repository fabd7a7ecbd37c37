"""`pctfleet runs` on hand-made journals: listing, detail, bad lines, pruning."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pctfleet.cli.main import _invoke, app
from pctfleet.run import history
from pctfleet.run.journal import Journal, prune
from tests.clirun import invoke

RUN = "20261201T100000-aaaaaa"
ROLLOUT = "20261201T110000-bbbbbb"


def records_of_a_run(pid: int = 1) -> list[dict]:
    start = {"t": 100.0, "run": RUN, "kind": "start", "playbook": "site.yml", "check": False}
    start |= {"containers": ["n1/200", "n1/201"], "command": "run", "pid": pid}
    ok = {"t": 101.0, "run": RUN, "kind": "task", "container": "n1/200", "name": "a"}
    bad = {"t": 102.0, "run": RUN, "kind": "task", "container": "n1/201", "name": "venv"}
    ok |= {"status": "ok", "msg": "", "diff": {"before": "x\n", "after": "y\n", "path": "/f"}}
    bad |= {"status": "failed", "msg": "exit 1", "rc": 1, "stdout": "no ensurepip", "stderr": ""}
    c1 = {"t": 103.0, "run": RUN, "kind": "container", "container": "n1/200", "status": "ok"}
    c2 = {"t": 103.0, "run": RUN, "kind": "container", "container": "n1/201", "status": "failed"}
    c2["message"] = "task 'venv' failed: exit 1"
    summary = {"containers": 2, "ok": 1, "changed": 0, "failed": 1, "unreachable": 0}
    end = {"t": 112.5, "run": RUN, "kind": "end", "summary": summary, "exit_code": 2}
    return [start, ok, bad, c1, c2, end]


def write(folder: Path, run_id: str, records: list[dict], tail: str = "") -> Path:
    path = folder / f"{run_id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return path


def rollout_records() -> list[dict]:
    start = {"t": 200.0, "run": ROLLOUT, "kind": "rollout-start", "playbook": "site.yml"}
    c1 = {"t": 201.0, "run": ROLLOUT, "kind": "container", "container": "n1/200", "status": "ok"}
    c2 = {"t": 202.0, "run": ROLLOUT, "kind": "container", "container": "n2/200"}
    c2["status"] = "unreachable"
    end = {"t": 210.0, "run": ROLLOUT, "kind": "rollout-end", "done": ["n1/200"]}
    end |= {"failed": ["n2/200"], "untouched": [], "stopped": "failures over threshold"}
    return [start, c1, c2, end]


def cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_runs_json_lists_both_kinds_newest_first_with_counts_and_exit(tmp_path):
    write(tmp_path, RUN, records_of_a_run())
    write(tmp_path, ROLLOUT, rollout_records())
    result = cli("runs", "--json", "--journal-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["runs"]
    assert [r["id"] for r in rows] == [ROLLOUT, RUN]
    rollout, run = rows
    assert (run["command"], run["containers"], run["exit_code"]) == ("run", 2, 2)
    assert (run["summary"]["failed"], run["duration"], run["state"]) == (1, 12.5, "finished")
    assert (rollout["kind"], rollout["exit_code"], rollout["summary"]["unreachable"]) == (
        "rollout",
        2,
        1,
    )


def test_a_truncated_last_line_is_reported_with_file_and_line_not_fatal(tmp_path):
    path = write(tmp_path, RUN, records_of_a_run(pid=os.getpid())[:-1], tail='{"t": 113, "ru')
    result = cli("runs", "--journal-dir", str(tmp_path))
    assert result.exit_code == 0
    assert f"{path}:6: truncated record skipped" in result.stderr
    assert RUN in result.stdout and "running" in result.stdout


def test_a_run_whose_process_is_gone_without_an_end_is_incomplete(tmp_path):
    write(tmp_path, RUN, records_of_a_run(pid=2**22 + 12345)[:-1])
    assert history.recent(tmp_path, 5)[0][0].state == "incomplete"


def test_show_gives_each_containers_tasks_with_output_and_diff(tmp_path):
    write(tmp_path, RUN, records_of_a_run())
    result = cli("runs", "show", RUN[:12], "--journal-dir", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["exit_code"] == 2
    failed = data["containers"]["n1/201"]
    assert failed["status"] == "failed" and failed["tasks"][0]["stdout"] == "no ensurepip"
    assert data["containers"]["n1/200"]["tasks"][0]["diff"]["after"] == "y\n"
    text = cli("runs", "show", RUN, "--journal-dir", str(tmp_path)).stdout
    assert "+y" in text and "| no ensurepip" in text and "task 'venv' failed" in text


def test_show_failed_and_container_filter(tmp_path):
    write(tmp_path, RUN, records_of_a_run())
    args = ["runs", "show", RUN, "--journal-dir", str(tmp_path), "--json"]
    assert list(json.loads(cli(*args, "--failed").stdout)["containers"]) == ["n1/201"]
    only = json.loads(cli(*args, "--container", "n1/200").stdout)["containers"]
    assert list(only) == ["n1/200"]


def test_show_unknown_id_is_one_line_and_exit_5(tmp_path):
    result = cli("runs", "show", "nope", "--journal-dir", str(tmp_path))
    assert result.exit_code == 5 and "no journal for run 'nope'" in result.stderr


def test_follow_stops_at_the_end_record(tmp_path):
    write(tmp_path, RUN, records_of_a_run())
    result = cli("runs", "show", RUN, "--follow", "--json", "--journal-dir", str(tmp_path))
    assert result.exit_code == 0
    assert [json.loads(x)["kind"] for x in result.stdout.splitlines()][-1] == "end"


def test_keep_by_count_and_by_days(tmp_path):
    for i in range(5):
        path = write(tmp_path, f"2026120{i}T000000-000000", [])
        os.utime(path, (time.time() - i * 86400 - 60,) * 2)
    prune(tmp_path, "3")
    assert len(list(tmp_path.glob("*.jsonl"))) == 3
    prune(tmp_path, "1d")
    assert [p.stem for p in tmp_path.glob("*.jsonl")] == ["20261200T000000-000000"]


def test_a_new_run_prunes_its_folder(tmp_path):
    for i in range(4):
        write(tmp_path, f"2026110{i}T000000-000000", [])
    Journal(tmp_path, keep="2").close()
    assert len(list(tmp_path.glob("*.jsonl"))) == 3  # two kept, and the new one


def test_a_bad_keep_is_one_line_and_exit_4(tmp_path, capsys):
    code = _invoke(app, ["runs", "--keep", "soon", "--journal-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 4 and err.strip() == "error: --keep 'soon': give a count (200) or days (30d)"


DEAD = 2**22 + 12345  # above the kernel's pid_max: no process has it


def test_a_resumed_rollout_is_running_while_the_resuming_process_lives(tmp_path):
    start, c1, c2, end = rollout_records()
    resume = {"t": 300.0, "run": ROLLOUT, "kind": "rollout-resume", "pid": os.getpid()}
    records = [{**start, "pid": DEAD}, c1, c2, end, resume]
    write(tmp_path, ROLLOUT, records)
    assert history.recent(tmp_path, 5)[0][0].state == "running"
    write(tmp_path, ROLLOUT, [*records[:-1], {**resume, "pid": DEAD}])
    assert history.recent(tmp_path, 5)[0][0].state == "incomplete"


def never_wait(seconds: float) -> None:
    raise AssertionError("--follow waits for a journal that will never grow")


def test_follow_gives_up_on_a_journal_that_names_no_process(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(time, "sleep", never_wait)
    write(tmp_path, ROLLOUT, rollout_records()[:-1])  # an older rollout journal: no pid
    assert history.recent(tmp_path, 5)[0][0].state == "no-end"
    code = _invoke(app, ["runs", "show", ROLLOUT, "--follow", "--journal-dir", str(tmp_path)])
    assert code == 1 and "names no process to wait for" in capsys.readouterr().err


def test_options_given_before_show_hold_there(tmp_path):
    """`runs --journal-dir X --json show ID`: the folder and the format reach `show`."""
    write(tmp_path, RUN, records_of_a_run())
    result = cli("runs", "--journal-dir", str(tmp_path), "--json", "show", RUN[:13])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["id"] == RUN and sorted(shown["containers"]) == ["n1/200", "n1/201"]


def test_keep_given_before_show_prunes_then_shows(tmp_path):
    old, new = "20250101T000000-cccccc", RUN
    write(tmp_path, old, [{"t": 1.0, "run": old, "kind": "start", "containers": []}])
    write(tmp_path, new, records_of_a_run())
    os.utime(tmp_path / f"{old}.jsonl", (1.0, 1.0))
    result = cli("runs", "--journal-dir", str(tmp_path), "--keep", "1", "show", new)
    assert result.exit_code == 0, result.output
    assert sorted(p.stem for p in tmp_path.glob("*.jsonl")) == [new]


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        (["--last", "3"], [], "error: --last lists runs: `runs show` takes none"),
        (["--journal-dir", "away"], ["--journal-dir", "."], "error: --journal-dir given twice"),
    ],
)
def test_what_show_cannot_honour_before_it_is_refused_in_one_line(
    tmp_path, monkeypatch, before, after, said
):
    write(tmp_path, RUN, records_of_a_run())
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke("runs", *before, "show", *after, RUN)
    assert code == 5 and out == ""
    assert err.startswith(said) and len(err.strip().splitlines()) == 1, err
