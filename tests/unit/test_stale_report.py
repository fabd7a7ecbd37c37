"""doctor and audit name what pctfleet did not leave: processes on the serving port or the
GPU outside our server's group, and flashinfer JIT objects built for another toolchain.

The probe runs for real here (a hand-started http.server on 127.0.0.5, stopped by its
PID; cache folders under tmp_path); /dev/nvidia* holders come from a fake /proc in
test_stale_servers.py, since no GPU is present.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

from rich.console import Console

from pctfleet.cli import doctorview
from pctfleet.cuda import audit as drift
from pctfleet.cuda.doctor import Diagnosis, _judge
from pctfleet.cuda.stale import parse_stale, stale_snippet
from pctfleet.run.results import ContainerRun
from pctfleet.status import exit_code
from tests.unit.test_server_scripts import read
from tests.unit.test_stale_servers import HOST, _free_port, _kill, _nohup_server


def _kv(**fields: str) -> str:
    return "".join(f"{k}={base64.b64encode(v.encode()).decode()}\n" for k, v in fields.items())


def _site(tmp_path: Path, port: int) -> dict:
    return {
        "server_port": port,
        "server_pidfile": str(tmp_path / "sglang.pid"),
        "server_home": str(tmp_path / "home"),
        "flashinfer_workspace_base": str(tmp_path / "ws"),
        "venv": str(tmp_path / "venv"),
    }


def test_the_probe_names_a_hand_started_server_and_foreign_jit_objects(tmp_path: Path) -> None:
    port = _free_port()
    pid = _nohup_server(port)
    site = _site(tmp_path, port)
    stale_dir = tmp_path / "ws/.cache/flashinfer"
    stale_dir.mkdir(parents=True)
    (stale_dir / ".pctfleet-toolchain").write_text("0000aaaa0000aaaa\n")
    for name in ("a.so", "b.so", "c"):
        (stale_dir / name).touch()
    half = tmp_path / "home/.cache/flashinfer"
    half.mkdir(parents=True)
    (half / "half.o").touch()
    try:
        found = parse_stale(read(stale_snippet(site)).output)
    finally:
        _kill(pid)
    [holder] = found.processes
    cmd = holder.cmdline
    assert holder.pid == pid and cmd.endswith(f"python3 -m http.server {port} --bind {HOST}")
    lines = found.lines()
    assert lines[0] == f"port {port} held by PID {pid} `{cmd}`, not started by pctfleet"
    assert f"{half} holds 1 unstamped entries" in lines[1]
    assert lines[2].startswith(f"{stale_dir} holds 3 entries built for another toolchain")
    assert "(stamp 0000aaaa0000aaaa, now " in lines[2] and len(lines) == 3


def test_our_own_server_and_matching_stamps_are_not_reported() -> None:
    ours = "4242\t1\t4242\tlistening on port 30000\tpython3 -m sglang.launch_server"
    out = _kv(pid="4242", alive="1", ours="1", holder1=ours, toolchain="t1")
    out += _kv(folder0="/root/.cache/flashinfer", stamp0="t1", entries0="9")
    assert parse_stale(out).lines() == []


HOSTILE = "[bold red]x[/] \x1b[2J`rm -rf /`"


def _hostile() -> str:
    holder = f"977\t5\t977\tholds /dev/nvidia0\t{HOSTILE}"
    return _kv(holder1=holder, holder2="garbage", holder3="x\ty") + _kv(
        toolchain="now", folder0="/c/fi", stamp0="old\n[red]", entries0="37"
    )


def test_hostile_content_stays_data_in_the_doctor_report_and_json() -> None:
    found = parse_stale(_hostile())
    assert [h.pid for h in found.processes] == [977]
    diagnosis = Diagnosis("n/201", stale=found)
    _judge(diagnosis)
    assert diagnosis.status == "problem"
    assert exit_code("doctor", [diagnosis.status]) == 2
    data = diagnosis.as_json()
    assert data["stale_processes"] == [
        {"pid": 977, "cmdline": HOSTILE, "why": "holds /dev/nvidia0"}
    ]
    assert data["stale_cache"] == [
        {"folder": "/c/fi", "entries": 37, "stamp": "old\n[red]", "toolchain": "now"}
    ]
    console = Console(file=io.StringIO(), width=400, color_system=None)
    doctorview.render(console, [diagnosis])
    text = console.file.getvalue()
    assert "PID 977 `[bold red]x[/] " in text and "\x1b" not in text
    assert "/c/fi holds 37 entries built for another toolchain" in text


def test_doctor_without_stale_things_has_no_stale_fields() -> None:
    diagnosis = Diagnosis("n/201")
    _judge(diagnosis)
    assert diagnosis.status == "ok"
    assert not {"stale_processes", "stale_cache"} & set(diagnosis.as_json())


def test_audit_reports_each_stale_thing_as_drift_and_exits_2() -> None:
    run = ContainerRun("node2", 201, extra_facts={"stale": _hostile()})
    audit = drift.judge(run, None)
    assert audit.status == "drift" and exit_code("audit", [audit.status]) == 2
    kinds = [(i.kind, i.what) for i in audit.items]
    assert kinds == [("stale-process", "pid 977"), ("stale-cache", "/c/fi")]
    assert (
        audit.items[0].actual == f"PID 977 `{HOSTILE}` holds /dev/nvidia0, not started by pctfleet"
    )


def test_audit_of_a_container_with_nothing_stale_stays_clean() -> None:
    run = ContainerRun("node2", 201, extra_facts={"stale": ""})
    assert drift.judge(run, None).status == "clean"
