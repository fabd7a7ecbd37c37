"""The progress a person sees during a run: the live panel's text, plain lines in pipes,
-v's output tail, and the one-JSON-document promise of --json."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from pctfleet.cli import progress
from pctfleet.run.results import ContainerRun


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fleet(nodes: int, per_node: int, clock: Clock) -> progress.Tracker:
    keys = [(f"pve{n}/{200 + c}", f"pve{n}", 1) for n in range(nodes) for c in range(per_node)]
    return progress.Tracker(keys, clock=clock)


def run_of(key: str, status: str = "ok") -> ContainerRun:
    node, ctid = key.split("/")
    return ContainerRun(node, int(ctid), status=status)


def plain(text) -> str:  # noqa: ANN001 - a rich Text
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    console.print(text)
    return console.file.getvalue()


def test_counts_slowest_task_and_no_eta_before_a_container_finished():
    clock = Clock()
    tracker = fleet(2, 2, clock)
    tracker.container_started(run_of("pve0/200"))
    tracker.task_started(run_of("pve0/200"), "install [bold]sglang[/bold]")
    clock.now += 5
    tracker.container_started(run_of("pve1/200"))
    clock.now += 70
    text = plain(progress.live_text(tracker.snapshot()))
    assert "containers: 0/4 done, 2 in flight, 2 waiting" in text
    assert "eta" not in text  # nothing finished yet: no estimate is invented
    assert "slowest: pve0/200 1m15s task 'install [bold]sglang[/bold]'" in text
    assert "pve0: 0 done, 1 in flight, 1 waiting" in text


def test_eta_from_finished_containers_and_their_parallelism():
    clock = Clock()
    tracker = fleet(1, 4, clock)
    for key in ("pve0/200", "pve0/201"):
        tracker.container_started(run_of(key))
    clock.now += 10
    tracker.container_finished(run_of("pve0/200"))
    tracker.container_finished(run_of("pve0/201"))
    snap = tracker.snapshot()
    # 2 waiting x 10 s each, 2 at a time: 10 s left
    assert progress.eta(snap) == 10.0
    assert progress.total_line(snap).endswith("; eta 10s")


def test_many_nodes_show_only_busy_or_troubled_ones_and_a_total():
    clock = Clock()
    tracker = fleet(50, 20, clock)
    tracker.container_started(run_of("pve3/200"))
    tracker.container_started(run_of("pve7/200"))
    tracker.container_finished(run_of("pve7/200", "unreachable"))
    for n in range(30, 10, -1):
        tracker.container_started(run_of(f"pve{n}/201"))
    lines = progress.node_lines(tracker.snapshot(), limit=8)
    assert lines[0] == "pve7: 1 done, 0 in flight, 19 waiting; 1 unreachable"  # problems first
    assert lines[1] == "pve3: 0 done, 1 in flight, 19 waiting"
    assert lines[-1] == "... 14 more node(s) busy or with problems"
    assert len(lines) == 9
    total = progress.total_line(tracker.snapshot())
    assert total.startswith("containers: 1/1000 done, 21 in flight, 978 waiting; 1 unreachable")


def test_a_container_of_two_plays_is_done_after_the_second_or_after_a_failure():
    clock = Clock()
    tracker = progress.Tracker([("a/1", "a", 2), ("a/2", "a", 2)], clock=clock)
    for key in ("a/1", "a/2"):
        tracker.container_started(run_of(key))
    tracker.container_finished(run_of("a/1"))
    tracker.container_finished(run_of("a/2", "failed"))
    states = {s.key: s.state for s in tracker.snapshot().slots}
    assert states == {"a/1": progress.WAITING, "a/2": progress.DONE}


def test_output_tail_keeps_the_last_line_redraws_included_and_shows_control_codes():
    clock = Clock()
    seen: list[tuple[str, str]] = []
    tracker = progress.Tracker(
        [("pve0/200", "pve0", 1)], clock=clock, on_output=lambda *a: seen.append(a)
    )
    run = run_of("pve0/200")
    tracker.container_started(run)
    out, err = tracker.streams(run, str)
    out.write(b"Collecting torch\nDownloading 10%\rDownloading 5")
    out.write(b"0%\r\x1b[2J\x1b]0;owned\x07\n")
    assert out.getvalue().startswith(b"Collecting torch\n")  # the result keeps every byte
    assert seen[:3] == [
        ("pve0/200", "Collecting torch"),
        ("pve0/200", "Downloading 10%"),
        ("pve0/200", "Downloading 50%"),
    ]
    text = plain(progress.live_text(tracker.snapshot(), tails=3))
    assert "pve0/200 | \\x1b[2J\\x1b]0;owned\\x07" in text
    assert "\x1b" not in text


def test_streamed_lines_are_redacted_and_a_line_still_arriving_is_not_shown():
    seen: list[tuple[str, str]] = []
    tracker = progress.Tracker([("a/1", "a", 1)], on_output=lambda *a: seen.append(a))
    run = run_of("a/1")
    tracker.container_started(run)
    out, _ = tracker.streams(run, lambda text: text.replace("hunter2", "********"))
    out.write(b"login as admin:hun")  # half a secret: redaction could not see it yet
    assert seen == [] and "hun" not in plain(progress.live_text(tracker.snapshot(), tails=3))
    out.write(b"ter2 failed\n")
    assert seen == [("a/1", "login as admin:******** failed")]
    assert "hunter2" not in plain(progress.live_text(tracker.snapshot(), tails=3))


def test_without_verbose_no_output_is_streamed():
    tracker = progress.Tracker([("a/1", "a", 1)])
    assert tracker.streams(run_of("a/1"), str) == (None, None)


def test_one_line_per_node_with_a_problem_after_the_run():
    runs = [run_of("pve1/200"), run_of("pve1/201", "failed"), run_of("pve2/200", "unreachable")]
    runs += [run_of("pve2/201", "unreachable"), run_of("pve3/200", "changed")]
    assert progress.node_problems(runs) == [
        "node pve1: 1 failed of 2 container(s)",
        "node pve2: 2 unreachable of 2 container(s)",
    ]


# -- the CLI through a pipe ---------------------------------------------------------------

PLAYBOOK = """\
- hosts: all
  tasks:
    - name: "count [bold]up[/bold]"
      shell: >-
        for i in 1 2; do printf "step %s \\033[31mred\\n" $i; done;
        printf "get 10%%\\rget 90%%\\n" >&2
"""


def pctfleet(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    book = tmp_path / "book.yml"
    book.write_text(PLAYBOOK)
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local"]
    argv += ["--journal-dir", str(tmp_path / "runs"), *args]
    return subprocess.run(argv, capture_output=True, timeout=120, check=False)


def test_piped_output_has_no_control_codes_and_v_streams_prefixed_lines_on_stderr(tmp_path):
    done = pctfleet(tmp_path, "-v")
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in done.stdout and b"\x1b" not in done.stderr
    err = done.stderr.decode()
    assert "  local/0 | step 1 \\x1b[31mred" in err
    assert "  local/0 | get 10%" in err and "  local/0 | get 90%" in err
    assert "changed  local/0        count [bold]up[/bold]" in err  # the task line, as before


def test_v_never_shows_what_a_command_script_says_after_the_command(tmp_path):
    """command's script ends its stderr with a marked line for the result (times);
    output a background process writes after it must not bring that line out."""
    book = tmp_path / "late.yml"
    book.write_text(
        "- hosts: all\n  tasks:\n    - shell: (sleep 0.3; echo late >&2) & echo now >&2\n"
    )
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "-v", "--json"]
    done = subprocess.run([*argv, "--journal-dir", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "local/0 | now\n" in done.stderr
    assert "pctfleet-ran" not in done.stderr + done.stdout


def test_v_with_json_keeps_stdout_one_json_document(tmp_path):
    done = pctfleet(tmp_path, "-v", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # the whole of stdout, nothing else
    assert document["summary"]["changed"] == 1
    assert b"local/0 | step 2" in done.stderr
    assert b"\x1b" not in done.stdout + done.stderr


# -- audit and verify on many containers --------------------------------------------------


def many_audits():  # noqa: ANN201
    from pctfleet.cuda.audit import ContainerAudit, DriftItem

    same = {"nvcc": "12.8", "driver": "570"}
    audits = [ContainerAudit(f"pve{n % 3}/{200 + n}", "clean", fingerprint=same) for n in range(12)]
    audits[4] = ContainerAudit(
        "pve1/204",
        "drift",
        message="1 task would change",
        items=[DriftItem("task", "pin [bold]torch[/bold]", "2.9.1", "2.8.0")],
        fingerprint={"nvcc": "12.6", "driver": "570"},
    )
    audits[5] = ContainerAudit("pve2/205", "unreachable", message="node down")
    return audits


def test_outcome_summary_counts_by_node_and_lists_only_nodes_needing_attention():
    assert progress.outcome_summary(many_audits(), "clean") == [
        "12 container(s): 10 clean, 1 drift, 1 unreachable",
        "  pve1: 3 clean, 1 drift",
        "  pve2: 3 clean, 1 unreachable",
        "  1 other node(s): all clean",
    ]


def test_audit_of_many_containers_summarises_first_and_details_only_attention():
    from pctfleet.cli import auditview

    console = Console(file=io.StringIO(), width=200)
    auditview.render(console, many_audits())
    out = console.file.getvalue()
    assert out.startswith("12 container(s): 10 clean, 1 drift, 1 unreachable\n")
    assert "pve1/204: drift" in out and "pin [bold]torch[/bold]" in out
    assert "pve2/205: unreachable" in out
    assert "pve0/200" not in out  # clean, and its versions agree with the majority
    assert "10 other container(s) have the majority's versions" in out


def test_verify_of_many_containers_summarises_first_and_lists_only_failures():
    from pctfleet.verify.runner import CheckResult, ContainerResult, VerifyResult, render

    rows = [
        ContainerResult(f"pve{n % 2}/{200 + n}", "passed", checks=[CheckResult("server", "passed")])
        for n in range(11)
    ]
    rows[3] = ContainerResult(
        "pve1/203", "failed", checks=[CheckResult("server", "failed", "no pid")]
    )
    console = Console(file=io.StringIO(), width=200)
    render(console, VerifyResult(rows, 1.0))
    out = console.file.getvalue()
    assert out.startswith("11 container(s): 10 passed, 1 failed\n  pve1: 4 passed, 1 failed\n")
    assert "pve1/203 server: no pid" in out
    assert "pve0/200" not in out


def test_live_panel_on_a_terminal_and_plain_total_lines_elsewhere():
    import time

    for live in (True, False):
        console = Console(file=io.StringIO(), width=120, force_terminal=live)
        tracker = progress.Tracker([("pve0/200", "pve0", 1)])
        with progress.Display(console, tracker, live=live, every=0.05):
            tracker.container_started(run_of("pve0/200"))
            tracker.task_started(run_of("pve0/200"), "[red]x[/red]")
            time.sleep(0.4)
        out = console.file.getvalue()
        assert "containers: 0/1 done, 1 in flight, 0 waiting" in out
        if live:  # the panel, redrawn in place; the task name as written
            assert "\x1b[" in out and "task '[red]x[/red]'" in out
        else:
            assert "\x1b" not in out


FORGER = r"""
m=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' \
  | grep -o 'pctfleet-ran-[0-9a-f]\{16\}' | head -1)
printf '%s exec 2 %s' "$m" "$m" >&2
( sleep 0.3
  printf '%s ran 1999-01-01T00:00:00.000000|2099-01-01T00:00:00.000000 %s' "$m" "$m" >&2 ) &
echo "found ${m:-nothing}"
"""


def test_a_program_cannot_forge_what_the_command_script_says(tmp_path):
    """The mark around what command's script says (start, end, whether the program
    started) is made in the container and is in no process's command line: a program
    that looks for it there and prints a forged copy, now and after the shell ends,
    changes nothing registered."""
    (tmp_path / "forge.sh").write_text(FORGER)
    book = tmp_path / "forge.yml"
    book.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - {command: 'sh forge.sh', register: r}\n"
        "    - debug: {msg: '{{ r.stdout }} {{ r.start[:4] }} {{ r.end[:4] }} {{ r.rc }}'}\n"
    )
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "--json"]
    done = subprocess.run([*argv, "--journal-dir", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    tasks = json.loads(done.stdout)["containers"][0]["tasks"]
    year = time.strftime("%Y")
    assert [t["status"] for t in tasks] == ["changed", "ok"]
    assert tasks[-1]["msg"] == f"found nothing {year} {year} 0"
