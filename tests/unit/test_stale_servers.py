"""Servers we did not start: found by the socket on the serving port (or a named PID file),
never by a name, stopped by PID, and readiness proven for our own process group.

The shell runs for real: against a fake /proc tree, and against real processes this test
starts (python http.server on 127.0.0.5), each stopped by its PID at the end.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pctfleet.modules.args import Context
from pctfleet.modules.server import Server
from pctfleet.sh import library
from tests.unit.test_server_scripts import read, sh

HOST = "127.0.0.5"


def _tcp_line(port: int, state: str, inode: int, v6: bool = False) -> str:
    local = ("0" * 32 if v6 else "0100007F") + f":{port:04X}"
    rest = "00000000:00000000 00:00000000 00000000 0 0"
    return f"   0: {local} 00000000:0000 {state} {rest} {inode} 1\n"


def test_the_port_owner_is_found_by_socket_inode_in_a_fake_proc(tmp_path: Path) -> None:
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when uid inode\n"
    (tmp_path / "net").mkdir()
    (tmp_path / "net/tcp").write_text(
        head
        + _tcp_line(30000, "0A", 555)
        + _tcp_line(30000, "01", 556)
        + _tcp_line(3000, "0A", 558)
    )
    (tmp_path / "net/tcp6").write_text(head + _tcp_line(30000, "0A", 557, v6=True))
    for pid, inode in {100: 555, 200: 556, 300: 557, 400: 558}.items():
        (tmp_path / f"{pid}/fd").mkdir(parents=True)
        (tmp_path / f"{pid}/fd/3").symlink_to(f"socket:[{inode}]")
        (tmp_path / f"{pid}/stat").write_text(
            f"{pid} (py thon) S 1 {pid - 1} 7 0 " + "0 " * 14 + "4711 0\n"
        )
        (tmp_path / f"{pid}/cmdline").write_bytes(b"python3\0-m\0http.server\0")
    (tmp_path / "300/fd/4").symlink_to("/dev/null")
    out = sh(
        library(["listener"]) + f"pctfleet_port_pids {tmp_path} 30000; "
        f"pctfleet_proc_line {tmp_path} 300 why"
    )
    assert out.stdout == "100\n300\n300\t4711\t299\twhy\tpython3 -m http.server\n", out.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _nohup_server(port: int) -> int:
    """A server started by hand: nohup, backgrounded, no PID file (its shell exits)."""
    out = sh(f"nohup python3 -m http.server {port} --bind {HOST} >/dev/null 2>&1 & echo $!")
    pid = int(out.stdout)
    for _ in range(100):
        if _listening(port):
            return pid
        time.sleep(0.05)
    raise AssertionError("the hand-started server never listened")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((HOST, port)) == 0


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def stranger():
    port = _free_port()
    pid = _nohup_server(port)
    yield port, pid
    _kill(pid)


def _args(tmp_path: Path, port: int, **given: object):
    raw = {
        "name": "t",
        "command": ["python3", "-m", "http.server", str(port), "--bind", HOST],
        "pidfile": str(tmp_path / "t.pid"),
        "logfile": str(tmp_path / "t.log"),
        "ready_url": f"http://{HOST}:{port}/",
        "ready_timeout": 10,
        "stop_grace": 2,
        **given,
    }
    return Server().prepare(raw, Context(), "t")


def _pid_on(port: int) -> list[str]:
    return sh(library(["listener"]) + f"pctfleet_port_pids /proc {port}").stdout.split()


def test_a_hand_started_server_is_named_stopped_by_pid_and_ours_then_holds_the_port(
    tmp_path: Path, stranger: tuple[int, int]
) -> None:
    port, old = stranger
    args = _args(tmp_path, port)
    plan = Server().decide(args, read(Server().probe(args, False)), True)
    assert (
        plan.changed
        and f"pid {old} (" in plan.msg
        and f"-m http.server {port} --bind {HOST};" in plan.msg
    )
    assert os.path.exists(f"/proc/{old}")  # deciding (check mode) touched nothing
    try:
        done = sh(plan.script or "")
        assert done.returncode == 0, done.stderr
        ours = int(done.stdout.split("pid=")[1])
        assert f"stopped={old}" in done.stdout
        assert not os.path.exists(f"/proc/{old}")
        assert _pid_on(port) == [str(ours)]
        again = Server().decide(args, read(Server().probe(args, False)), False)
        assert not again.changed, again.msg
    finally:
        sh(f"kill -TERM -{int((tmp_path / 't.pid').read_text())}")


def test_stale_fail_refuses_naming_the_pid_and_leaves_it_running(
    tmp_path: Path, stranger: tuple[int, int]
) -> None:
    port, old = stranger
    args = _args(tmp_path, port, stale="fail")
    plan = Server().decide(args, read(Server().probe(args, False)), False)
    assert plan.failed and plan.script is None
    assert f"pid {old} (" in plan.msg and f"-m http.server {port}" in plan.msg
    assert os.path.exists(f"/proc/{old}")


def test_another_process_answering_on_the_port_is_never_ready(
    tmp_path: Path, stranger: tuple[int, int]
) -> None:
    port, old = stranger
    # Ours cannot bind (the stranger holds the port) but lives: it must not count as ready.
    args = _args(tmp_path, port, command=["sh", "-c", "exec sleep 30"])
    plan = Server().decide(args, None, False)  # as if the stranger came after the probe
    try:
        done = sh(plan.script or "")
        assert done.returncode == 1
        assert f"port {port} is held by pid {old} (" in done.stderr
        assert os.path.exists(f"/proc/{old}")
    finally:
        sh(f"kill -TERM -{int((tmp_path / 't.pid').read_text())}")


def _fake_proc(root: Path, pid: int, group: int, cmdline: bytes, links: dict[str, str]) -> None:
    (root / f"{pid}/fd").mkdir(parents=True)
    for fd, target in links.items():
        (root / f"{pid}/fd/{fd}").symlink_to(target)
    stat = f"{pid} (x) S 1 {group} 7 0 " + "0 " * 14 + f"{pid}00 0\n"
    (root / f"{pid}/stat").write_text(stat)
    (root / f"{pid}/cmdline").write_bytes(cmdline)


def _gpu_tree(tmp_path: Path) -> tuple[Path, Path]:
    proc, dev = tmp_path / "proc", tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidia0").touch()
    _fake_proc(proc, 10, 10, b"python3\0-m\0sglang.launch_server\0", {"5": "/dev/nvidia0"})
    _fake_proc(proc, 11, 10, b"worker\0", {"3": "/dev/nvidiactl", "4": "/dev/nvidia0"})
    _fake_proc(proc, 20, 20, b"evil\tname\nx\0--gpu\0", {"1": "/dev/nvidia1", "2": "/dev/null"})
    _fake_proc(proc, 30, 30, b"nvidia-smi\0", {"1": "/dev/null", "2": "socket:[9]"})
    return proc, dev


def test_gpu_holders_are_found_by_fd_links_in_a_fake_proc_never_by_name(tmp_path: Path) -> None:
    proc, dev = _gpu_tree(tmp_path)
    out = sh(library(["listener"]) + f"pctfleet_holder_lines {proc} {dev} '' ''")
    assert out.stdout.splitlines() == [
        "10\t1000\t10\tholds /dev/nvidia0\tpython3 -m sglang.launch_server",
        "11\t1100\t10\tholds /dev/nvidia0, /dev/nvidiactl\tworker",
        "20\t2000\t20\tholds /dev/nvidia1\tevil name x --gpu",
    ], out.stderr


def test_no_gpu_device_means_no_gpu_scan(tmp_path: Path) -> None:
    proc, dev = _gpu_tree(tmp_path)
    (dev / "nvidia0").unlink()
    out = sh(library(["listener"]) + f"pctfleet_gpu_pids {proc} {dev}")
    assert out.stdout == "" and out.returncode == 0


def test_gpu_holders_outside_our_group_are_strangers_ours_are_not() -> None:
    from pctfleet.modules.server import Holder, ProcessState

    lines = ["10\t1\t10\tholds /dev/nvidia0\tsglang", "11\t1\t10\tholds /dev/nvidia0\tw"]
    lines.append("20\t1\t20\tholds /dev/nvidia1\tother")
    holders = tuple(h for line in lines if (h := Holder.parse(line)))
    state = ProcessState(pid="10", alive=True, ours=True, holders=holders)
    assert [h.pid for h in state.strangers()] == [20]
    # The same PID file without our marker: nothing is ours, all three are reported.
    foreign = ProcessState(pid="10", alive=True, ours=False, holders=holders)
    assert [h.pid for h in foreign.strangers()] == [10, 11, 20]


def _marked_server(tmp_path: Path, port: int) -> int:
    """Our PID file names a live process without PCTFLEET_SERVER=t: a reused PID."""
    pid = _nohup_server(port)
    (tmp_path / "t.pid").write_text(f"{pid}\n")
    return pid


def test_a_pid_file_naming_a_foreign_process_is_reported_and_refused_under_fail(
    tmp_path: Path,
) -> None:
    port = _free_port()
    foreign = _marked_server(tmp_path, port)
    try:
        args = _args(tmp_path, _free_port(), stale="fail")
        state = read(Server().probe(args, False))
        plan = Server().decide(args, state, False)
        assert plan.failed and plan.script is None, plan.msg
        assert f"pid {foreign} (" in plan.msg and "not started by pctfleet" in plan.msg
        assert os.path.exists(f"/proc/{foreign}")
    finally:
        _kill(foreign)


def test_the_launch_never_stops_a_foreign_pid_from_our_pid_file_as_ours(tmp_path: Path) -> None:
    port = _free_port()
    foreign = _marked_server(tmp_path, port)
    ours_port = _free_port()
    args = _args(tmp_path, ours_port)
    plan = Server().decide(args, None, False)  # as if the PID was reused after the probe
    try:
        done = sh(plan.script or "")
        assert done.returncode == 0, done.stderr
        assert "not started by pctfleet: not stopped as ours" in done.stderr
        assert os.path.exists(f"/proc/{foreign}") and _listening(port)
    finally:
        _kill(foreign)
        sh(f"kill -TERM -{int((tmp_path / 't.pid').read_text())}")


@pytest.mark.skipif(not shutil.which("strace"), reason="counting forks needs strace")
@pytest.mark.skipif(bool(glob.glob("/dev/nvidia*")), reason="a GPU here: holders are looked for")
def test_a_pid_file_probe_with_nothing_to_look_for_starts_no_process(tmp_path: Path) -> None:
    """A server_stop task names only a PID file: no port, no PID-file list, no GPU, so the
    probe has no holder to look for and starts no subshell for them."""
    from pctfleet.sh import snippet

    probe = snippet(
        "server_process",
        PIDFILE=str(tmp_path / "stale.pid"),
        NAME="",
        ENV_FILE="",
        READY_URL="",
        PORT="",
        STALE_PIDFILES="",
    )
    trace = tmp_path / "trace"
    command = ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=fork,vfork,clone,clone3"]
    done = subprocess.run([*command, "dash", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    started = [line for line in trace.read_text().splitlines() if "clone" in line or "fork" in line]
    assert started == []
