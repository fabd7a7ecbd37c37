"""`pctfleet run` against the real lab: idempotence, one call when converged, check, diff."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

PLAYBOOKS = Path(__file__).parent / "playbooks"
CORE = PLAYBOOKS / "core.yml"
CONTAINERS = ["node1/200", "node1/201", "node2/200", "node2/201"]
# The lab's base containers; the lab may hold more (other suites and inits) on node1.
BASE = ",".join(CONTAINERS)


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def pctfleet(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, timeout=timeout, text=True
    )


def run_json(info, playbook: Path, *more: str, journal: Path) -> tuple[int, dict]:
    proc = pctfleet(
        "run",
        str(playbook),
        "-i",
        str(info.inventory),
        "--json",
        "--journal-dir",
        str(journal),
        *more,
        *([] if "--limit" in more else ["--limit", BASE]),
    )
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def in_ct(info, key: str, script: str) -> subprocess.CompletedProcess:
    return pctfleet("exec", "-i", str(info.inventory), "--limit", key, "--", "sh", "-c", script)


def on_base(info, *argv: str) -> subprocess.CompletedProcess:
    """`argv` run in each of the lab's base containers (`pctfleet exec`)."""
    return pctfleet("exec", "-i", str(info.inventory), "--limit", BASE, "--", *argv)


def by_key(document: dict) -> dict[str, dict]:
    return {f"{c['node']}/{c['ctid']}": c for c in document["containers"]}


@pytest.fixture(scope="module")
def converged(info, tmp_path_factory):
    """core.yml applied twice on a clean slate: (first run, second run)."""
    journal = tmp_path_factory.mktemp("journal")
    reset = journal / "reset.yml"
    reset.write_text(
        textwrap.dedent("""\
        - hosts: all
          tasks:
            - name: stop the stand-in of an earlier run
              server_stop: {pidfile: /run/pctfleet/core-standin.pid, grace: 5}
            - name: remove its files
              file: {path: /opt/pctfleet-core, state: absent}
        """)
    )
    assert run_json(info, reset, journal=journal)[0] == 0
    first = run_json(info, CORE, journal=journal)
    second = run_json(info, CORE, journal=journal)
    return first, second, journal


def test_first_run_changes_every_container(converged):
    (code, doc), _, _ = converged
    assert code == 0, doc["summary"]
    runs = by_key(doc)
    assert sorted(runs) == CONTAINERS
    for run in runs.values():
        assert run["status"] == "changed"
        assert run["stats"]["changed"] >= 9 and run["stats"]["failed"] == 0
        handler = [t for t in run["tasks"] if t["handler"]]
        assert [t["name"] for t in handler] == ["record restart"]


def test_second_run_changes_nothing_with_one_remote_call(converged):
    _, (code, doc), _ = converged
    assert code == 0
    for key, run in by_key(doc).items():
        assert run["stats"]["changed"] == 0, (key, [t for t in run["tasks"] if t["changed"]])
        assert run["remote_calls"] == 1, key
        assert not any(t["handler"] for t in run["tasks"])


def test_state_inside_the_containers_is_what_was_declared(info, converged):
    script = (
        "cd /opt/pctfleet-core && cat app.conf && stat -c '%a' app.conf app.env touched && "
        "readlink current.conf && cat shell.out && venv/bin/python -c 'import six; "
        "print(six.__version__)' && wc -l < handler.log"
    )
    proc = in_ct(info, "node2/201", script)
    assert proc.stdout.split() == [
        "port=18021",
        "640",
        "600",
        "600",
        "/opt/pctfleet-core/app.conf",
        "42",
        "1.16.0",
        "1",
    ]


def test_server_is_ready_and_keeps_its_pid(info, converged):
    (_, first), (_, second), _ = converged
    for key in CONTAINERS:
        launched = next(t for t in by_key(first)[key]["tasks"] if t["module"] == "server")
        kept = next(t for t in by_key(second)[key]["tasks"] if t["module"] == "server")
        assert launched["status"] == "changed" and kept["status"] == "ok"
        assert kept["msg"].startswith("running, pid ")
        pid = kept["msg"].split()[-1]
        port = 18000 + int(key[4]) * 10 + int(key[-3:]) - 200
        probe = in_ct(
            info,
            key,
            f'cat /run/pctfleet/core-standin.pid; python3 -c "import '
            f"urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/health')"
            f'.status)"',
        )
        assert probe.stdout.split() == [pid, "200"]


def test_journal_has_a_record_per_task(converged):
    _, (_, doc), journal = converged
    records = [json.loads(line) for line in Path(doc["journal"]).read_text().splitlines()]
    tasks = [r for r in records if r["kind"] == "task"]
    assert len(tasks) == sum(len(c["tasks"]) for c in doc["containers"])
    assert Path(doc["journal"]).parent == journal


def test_check_mode_on_a_fresh_container_changes_nothing(info, converged, tmp_path):
    fresh = "/opt/pctfleet-fresh"
    code, doc = run_json(
        info,
        CORE,
        "--check",
        "--limit",
        "node2/200",
        "-e",
        f"app_dir={fresh} venv={fresh}/venv",
        journal=tmp_path,
    )
    assert code == 0
    run = by_key(doc)["node2/200"]
    assert run["stats"]["changed"] >= 7
    assert in_ct(info, "node2/200", f"test -e {fresh}").returncode == 1


def test_diff_shows_real_before_and_after(info, converged, tmp_path):
    in_ct(info, "node1/200", "printf 'port=1\\n' > /opt/pctfleet-core/app.conf")
    proc = pctfleet(
        "run",
        str(CORE),
        "-i",
        str(info.inventory),
        "--limit",
        "node1/200",
        "--check",
        "--diff",
        "--journal-dir",
        str(tmp_path),
    )
    assert "-port=1" in proc.stderr and "+port=18010" in proc.stderr
    assert in_ct(info, "node1/200", "cat /opt/pctfleet-core/app.conf").stdout == "port=1\n"
    code, doc = run_json(info, CORE, "--limit", "node1/200", "--diff", journal=tmp_path)
    task = next(t for t in by_key(doc)["node1/200"]["tasks"] if t["name"] == "config from content")
    assert task["status"] == "changed"
    assert task["diff"]["before"] == "port=1\n" and task["diff"]["after"] == "port=18010\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_undefined_variable_stops_before_any_change(info, tmp_path):
    book = _write(
        tmp_path,
        "undef.yml",
        """\
        - hosts: all
          tasks:
            - name: first change
              file: {path: /opt/pctfleet-undef-marker, state: touch}
            - name: uses a typo
              copy: {content: "{{ nope_not_defined }}", dest: /opt/x}
        """,
    )
    proc = pctfleet(
        "run", str(book), "-i", str(info.inventory), "--limit", BASE, "--journal-dir", str(tmp_path)
    )
    assert proc.returncode == 4
    assert f"{book}:5" in proc.stderr and "nope_not_defined" in proc.stderr
    assert "Traceback" not in proc.stderr
    check = on_base(info, "test", "-e", "/opt/pctfleet-undef-marker")
    assert check.returncode == 2  # absent everywhere: every container's test failed


def test_yaml_error_names_file_and_line(info, tmp_path):
    book = _write(tmp_path, "broken.yml", "- hosts: all\n  tasks:\n    - name: x\n      file: [\n")
    proc = pctfleet("run", str(book), "-i", str(info.inventory))
    assert proc.returncode == 4
    assert str(book) in proc.stderr and proc.stderr.count("\n") == 1


def test_failing_task_fails_only_its_container(info, tmp_path):
    book = _write(
        tmp_path,
        "partial.yml",
        """\
        - hosts: all
          tasks:
            - name: fails on one container
              command: sh -c "exit 7"
              when: inventory_hostname == 'node1/201'
            - name: the others carry on
              shell: date > /tmp/pctfleet-carried-on
        """,
    )
    code, doc = run_json(info, book, journal=tmp_path)
    assert code == 2
    statuses = {key: run["status"] for key, run in by_key(doc).items()}
    assert statuses == {
        "node1/200": "changed",
        "node1/201": "failed",
        "node2/200": "changed",
        "node2/201": "changed",
    }
    assert "non-zero return code (rc 7)" in by_key(doc)["node1/201"]["message"]


def test_stale_server_stop_kills_only_the_recorded_group(info, tmp_path):
    detach = "</dev/null >/dev/null 2>&1 &"
    setup = (
        f"rm -f /tmp/stale.pid; setsid sh -c 'sleep 300 & sleep 300' {detach} "
        f"echo $! > /tmp/stale.pid; setsid sh -c 'sleep 301 & sleep 301' {detach} "
        "echo $! > /tmp/other.pid; sleep 0.3"
    )
    in_ct(info, "node2/201", setup)
    book = _write(
        tmp_path,
        "stop.yml",
        """\
        - hosts: all
          tasks:
            - name: stop the stale server
              server_stop: {pidfile: /tmp/stale.pid, grace: 2}
        """,
    )
    code, doc = run_json(info, book, "--limit", "node2/201", journal=tmp_path)
    assert code == 0 and by_key(doc)["node2/201"]["stats"]["changed"] == 1
    survivors = in_ct(info, "node2/201", "ps -eo pgid=,args= | grep '[s]leep 30'").stdout
    other = in_ct(info, "node2/201", "cat /tmp/other.pid").stdout.strip()
    pgids = {line.split()[0] for line in survivors.splitlines()}
    assert pgids == {other}, survivors
    assert "sleep 301" in survivors and "sleep 300" not in survivors
    in_ct(info, "node2/201", "kill -TERM -$(cat /tmp/other.pid)")
    code, doc = run_json(info, book, "--limit", "node2/201", journal=tmp_path)
    assert by_key(doc)["node2/201"]["stats"]["changed"] == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_new_tasks_and_exits_99(info, tmp_path, sig):
    book = _write(
        tmp_path,
        "slow.yml",
        """\
        - hosts: all
          tasks:
            - name: first
              shell: "touch /tmp/pctfleet-started; sleep 8; echo first >> /tmp/pctfleet-interrupt"
            - {name: second, shell: "echo second >> /tmp/pctfleet-interrupt"}
        """,
    )
    on_base(info, "rm", "-f", "/tmp/pctfleet-interrupt", "/tmp/pctfleet-started")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pctfleet",
            "run",
            str(book),
            "-i",
            str(info.inventory),
            "--limit",
            BASE,
            "--journal-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # signal once every container is inside "first"
        started = on_base(info, "test", "-e", "/tmp/pctfleet-started")
        if started.returncode == 0:
            break
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 99, err
    done = on_base(info, "cat", "/tmp/pctfleet-interrupt")
    lines = [line.split(" | ")[1] for line in done.stdout.splitlines()]
    assert lines == ["first"] * 4  # the running task finished; the next never started
    journal = next(tmp_path.glob("*.jsonl")).read_text().splitlines()
    assert json.loads(journal[-1])["kind"] == "interrupted"
