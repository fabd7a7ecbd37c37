"""The server module's scripts, run for real with sh: launch, readiness, failure, stop."""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import threading
from pathlib import Path

from pctfleet.facts import script as probe
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact
from pctfleet.modules.server import Server, ServerStop
from pctfleet.sh import library as sh_library

SERVER = ["sh", "-c", 'echo "up ${GREETING:-}"; echo "$PCTFLEET_SERVER"; exec sleep 30']


def sh(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)


def read(snippet: str) -> Fact:
    script = probe.build_script({"k": snippet})
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=30)
    return probe.parse_output(out.stdout, probe.nonce_of(script))["k"]


def launch(tmp_path: Path, **given: object) -> tuple[object, subprocess.CompletedProcess]:
    raw = {
        "name": "t",
        "command": SERVER,
        "pidfile": str(tmp_path / "run" / "t.pid"),
        "logfile": str(tmp_path / "log" / "t.log"),
        "ready_log": "up",
        "ready_timeout": 5,
        **given,
    }
    args = Server().prepare(raw, Context(), "t")
    return args, sh(Server().decide(args, None, False).script or "")


def stop(pidfile: Path) -> None:
    args = ServerStop().prepare({"pidfile": str(pidfile), "grace": 2}, Context(), "t")
    plan = ServerStop().decide(args, read(ServerStop().probe(args, False)), False)
    if plan.script:
        sh(plan.script)


def test_a_launch_sources_the_env_file_records_its_spec_and_is_then_converged(tmp_path):
    env = tmp_path / "t.env"
    env.write_text("GREETING=hello\n")
    pidfile = tmp_path / "run" / "t.pid"
    try:
        args, done = launch(tmp_path, env_file=str(env))
        assert done.returncode == 0, done.stderr
        pid = done.stdout.strip().removeprefix("pid=")
        assert pidfile.read_text().strip() == pid
        assert (tmp_path / "log" / "t.log").read_text() == "up hello\nt\n"
        envsha = hashlib.sha256(env.read_bytes()).hexdigest()[:16]
        assert (tmp_path / "run" / "t.pid.spec").read_text() == f"{args.spec()}-{envsha}\n"
        fact = read(Server().probe(args, False))
        assert fact.fields()["ours"] == "1"
        assert not Server().decide(args, fact, False).changed
    finally:
        stop(pidfile)
    assert not pidfile.exists()
    assert not os.path.exists(f"/proc/{pid}")


def test_a_fail_log_line_fails_the_launch_with_the_log_tail(tmp_path):
    try:
        _, done = launch(tmp_path, ready_log="never", fail_log=["nothing", "up"])
        assert done.returncode == 1
        assert done.stderr.startswith("server reported a failure; log tail:\nup \n"), done.stderr
    finally:
        stop(tmp_path / "run" / "t.pid")


def test_a_server_not_ready_in_time_fails(tmp_path):
    try:
        _, done = launch(tmp_path, ready_log="never", ready_timeout=0.3)
        assert done.returncode == 1
        assert done.stderr.startswith("not ready after 0.3s; log tail:\n"), done.stderr
    finally:
        stop(tmp_path / "run" / "t.pid")


def test_the_unit_launcher_gives_the_server_what_the_detached_mode_gives(tmp_path):
    """The launcher a systemd unit runs: workdir, env file sourced, `env` wins, argv kept."""
    from pctfleet.modules.unitfile import launcher_text

    env_file = tmp_path / "sg.env"
    env_file.write_text("A=from-file\nB='two words'\n")
    show = 'pwd; echo "A=$A B=$B C=$C S=$PCTFLEET_SERVER"; printf "[%s]" "$@"'
    raw = {
        "name": "sg",
        "command": ["sh", "-c", show, "x", "it's", "$HOME", "%n"],
        "env": {"A": "from-env", "C": "$(id -u) `x`"},
        "env_file": str(env_file),
        "chdir": str(tmp_path),
    }
    args = Server().prepare(raw, Context(), "t")
    launcher = tmp_path / "launch.sh"
    launcher.write_text(launcher_text(args))
    done = subprocess.run(["sh", str(launcher)], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        str(tmp_path),
        "A=from-env B=two words C=$(id -u) `x` S=sg",
        "[it's][$HOME][%n]",
    ]


def test_clearing_the_cache_never_stops_a_pid_file_s_process_without_our_marker(tmp_path):
    from pctfleet.sh import snippet

    pidfile = tmp_path / "s.pid"
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        pidfile.write_text(f"{stranger.pid}\n")
        done = sh(snippet("flashinfer_cache_stop", PIDFILE=str(pidfile), GRACE=1))
        assert done.returncode == 0, done.stderr
        assert "was not started by pctfleet: not stopped" in done.stderr
        assert stranger.poll() is None, "a process pctfleet did not start was stopped"
    finally:
        stranger.kill()
        stranger.wait()
    marked = subprocess.Popen(["sleep", "30"], env={**os.environ, "PCTFLEET_SERVER": "s"})
    pidfile.write_text(f"{marked.pid}\n")
    done = sh(snippet("flashinfer_cache_stop", PIDFILE=str(pidfile), GRACE=1))
    assert marked.wait(timeout=5) is not None and not pidfile.exists(), done.stderr


def test_the_unit_launcher_writes_the_pid_file_with_the_servers_pid(tmp_path):
    """systemd starts the unit again after a reboot (empty /run) or a failure without
    pctfleet: the launcher itself names the server's PID in the PID file."""
    from pctfleet.modules.unitfile import launcher_text

    pidfile = tmp_path / "run" / "sg.pid"
    raw = {"name": "sg", "command": ["sh", "-c", "echo $$"], "pidfile": str(pidfile)}
    args = Server().prepare(raw, Context(), "t")
    launcher = tmp_path / "launch.sh"
    launcher.write_text(launcher_text(args))
    done = subprocess.run(["sh", str(launcher)], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert pidfile.read_text() == done.stdout  # the PID the server itself sees
    assert [p.name for p in pidfile.parent.iterdir()] == ["sg.pid"]


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        codes = {"/health": 200, "/sick": 503, "/moved": 302, "/?q=1": 204}
        self.send_response(codes.get(self.path, 404))
        if self.path == "/moved":
            self.send_header("Location", "/health")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_the_health_status_is_read_without_starting_python(tmp_path):
    # python3 on PATH is a stub that logs its start and fails: only a redirect needs it.
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text(f"#!/bin/sh\necho started >> {tmp_path}/starts\nexit 1\n")
    stub.chmod(0o755)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        urls = [
            f"{base}/health",
            f"{base}/sick",
            f"{base}?q=1",
            "http://127.0.0.1:9/",
            base + "/moved",
        ]
        lines = "\n".join(f'pctfleet_http "{url}"' for url in urls)
        script = f"PATH={stub.parent}:$PATH\n{sh_library(('http',))}\n{lines}\n"
        out = sh(script)
    finally:
        server.shutdown()
    assert out.stdout.split() == ["200", "503", "204", "0", "0"]
    assert (tmp_path / "starts").read_text() == "started\n"  # the redirect only
