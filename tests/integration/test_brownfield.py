"""Containers set up by hand the way users do: a venv made by `uv venv`, which has no pip.

The `pip` module must fill it with the container's uv, change nothing on a second run
(one `pct exec`), and, where the container has no uv, bootstrap pip with ensurepip.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from pctfleet.lab.system import attach
from pctfleet.sh import library

pytestmark = pytest.mark.lab

KEY = "node2/201"
LXC = ["lxc-attach", "-P", "/var/lib/pctfleet-lab/lxc", "-n", "pctfleet-n2-201", "--"]
UV = "/root/.local/bin/uv"
MADE = "/root/venv /root/venv-nouv /root/.local/bin/uv /root/.cache/uv /etc/uv"
# The lab's HTTPS goes through a proxy whose CA is only in the system store: like pip
# (Debian's reads that store), uv must be told to use it. Users set it in uv's own config.
UV_TOML = "mkdir -p /etc/uv && echo 'native-tls = true' > /etc/uv/uv.toml"


def in_ct(script: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    done = attach([*LXC, "sh", "-c", script], input=stdin)
    assert done.returncode == 0, (script, done.stderr.decode()[-2000:])
    return done


@pytest.fixture(scope="module")
def uv_binary(tmp_path_factory) -> bytes:
    """uv from its wheel on PyPI (this machine has PyPI access)."""
    folder = tmp_path_factory.mktemp("uv")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    done = subprocess.run([*cmd, "-d", str(folder), "uv"], capture_output=True, timeout=300)
    if done.returncode != 0:
        pytest.skip(f"no uv wheel: {done.stderr.decode()[-300:]}")
    with zipfile.ZipFile(next(folder.glob("uv-*.whl"))) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".data/scripts/uv"))
        return wheel.read(name)


@pytest.fixture
def uv_venv(lab, uv_binary):
    """uv in root's ~/.local/bin, `uv venv /root/venv` holding tomli-w; removed afterwards.

    Under lxc-attach (the host's environment, its SSL_CERT_FILE included), not `pct exec`.
    """
    info = lab.up(nodes=2, containers=2)
    in_ct(f"rm -rf {MADE} && {UV_TOML}")
    in_ct(f"mkdir -p /root/.local/bin && cat > {UV} && chmod 755 {UV}", stdin=uv_binary)
    in_ct(f"{UV} venv -q /root/venv")
    in_ct(f"{UV} pip install -q --python /root/venv/bin/python tomli-w==1.0.0")
    yield info
    in_ct(f"rm -rf {MADE}; rmdir /root/.local/bin /root/.local 2>/dev/null || :")


def run(info, tmp_path: Path, venv: str) -> dict:
    book = tmp_path / "pip.yml"
    book.write_text(
        textwrap.dedent(f"""\
        - hosts: all
          tasks:
            - name: tomli into the venv
              pip: {{name: tomli==2.0.1, virtualenv: {venv}}}
        """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "pctfleet", "run", str(book), "-i", str(info.inventory)]
        + ["--limit", KEY, "--json", "--diff", "--journal-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    (container,) = json.loads(done.stdout)["containers"]
    return container


def has(venv: str, module: str) -> bool:
    check = f"{venv}/bin/python -c 'import {module}' 2>/dev/null && echo yes || echo no"
    return in_ct(check).stdout.decode().strip() == "yes"


def test_uv_venv_is_filled_with_uv_and_then_left_alone(uv_venv, tmp_path):
    first = run(uv_venv, tmp_path, "/root/venv")
    assert first["stats"]["changed"] == 1, first["tasks"]
    assert has("/root/venv", "tomli") and has("/root/venv", "tomli_w")
    # pip would have needed ensurepip first: uv installed it, so the venv still has no pip.
    assert not has("/root/venv", "pip"), "pip was put into the venv: uv was not used"
    second = run(uv_venv, tmp_path, "/root/venv")
    assert second["stats"]["changed"] == 0, second["tasks"]
    assert second["remote_calls"] == 1


def test_without_uv_pip_is_bootstrapped_with_ensurepip(uv_venv, tmp_path):
    in_ct(f"{UV} venv -q /root/venv-nouv && rm {UV}")
    assert not has("/root/venv-nouv", "pip")
    first = run(uv_venv, tmp_path, "/root/venv-nouv")
    assert first["stats"]["changed"] == 1, first["tasks"]
    assert has("/root/venv-nouv", "pip") and has("/root/venv-nouv", "tomli")


# --- a server started by hand, with nohup and no PID file, holding the serving port -------
# Port 30123, not the stack's 30000: a stand-in another test left on 30000 is not ours to stop.
PORT = 30123
BROWN_PID = "/run/pctfleet/brown.pid"
_PORT_PIDS = library(["listener"]) + f"pctfleet_port_pids /proc {PORT}"


def _stranger() -> tuple[int, str]:
    """`nohup python3 -m http.server &` as a user would; its PID and command line."""
    hand = f"nohup python3 -m http.server {PORT} --bind 127.0.0.1 >/dev/null 2>&1 & echo $!"
    pid = int(in_ct(hand).stdout)
    in_ct(f"for i in $(seq 50); do {_PORT_PIDS} | grep -qx {pid} && exit 0; sleep 0.1; done")
    return pid, f"python3 -m http.server {PORT} --bind 127.0.0.1"


def _port_pids() -> list[int]:
    return [int(p) for p in in_ct(_PORT_PIDS).stdout.split()]


def _alive(pid: int) -> bool:
    return in_ct(f"kill -0 {pid} 2>/dev/null && echo y || echo n").stdout.strip() == b"y"


def _serve(info, tmp_path: Path, *extra: str, stale: str = "stop") -> subprocess.CompletedProcess:
    book = tmp_path / "serve.yml"
    book.write_text(
        textwrap.dedent(f"""\
        - hosts: all
          tasks:
            - name: our server on the port
              server:
                name: brown
                command: python3 -m http.server {PORT} --bind 127.0.0.1
                ready_url: http://127.0.0.1:{PORT}/
                ready_timeout: 20
                stop_grace: 3
                stale: {stale}
        """)
    )
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", "run", str(book), "-i", str(info.inventory)]
        + ["--limit", KEY, "--json", "--diff", "--journal-dir", str(tmp_path), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def brown(lab):
    """The lab; afterwards each process the test started is stopped by its PID."""
    started: list[int] = []
    yield lab.up(nodes=2, containers=2), started
    ours = f"[ -f {BROWN_PID} ] && kill -TERM -$(cat {BROWN_PID}) 2>/dev/null"
    in_ct(f"{ours}; rm -f {BROWN_PID} {BROWN_PID}.spec; :")
    for pid in started:
        in_ct(f"kill -KILL {pid} 2>/dev/null; :")


def _task(done: subprocess.CompletedProcess) -> dict:
    (container,) = json.loads(done.stdout)["containers"]
    return container


def test_a_hand_started_server_on_the_port_is_named_stopped_and_replaced(brown, tmp_path):
    info, started = brown
    old, cmdline = _stranger()
    started.append(old)
    check = _serve(info, tmp_path, "--check")
    assert check.returncode == 0, check.stderr[-2000:]
    (task,) = _task(check)["tasks"]
    assert f"pid {old} ({cmdline}; listening on port {PORT})" in task["msg"], task
    assert _alive(old), "--check stopped it"
    done = _serve(info, tmp_path)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    (task,) = _task(done)["tasks"]
    assert task["status"] == "changed" and f"pid {old} ({cmdline}" in task["msg"], task
    assert task["diff"] and f"pid {old} ({cmdline}" in task["diff"]["before"], task
    journal = "".join(p.read_text() for p in tmp_path.rglob("*.jsonl"))
    assert f"pid {old} ({cmdline}; listening on port {PORT})" in journal
    assert not _alive(old)
    ours = int(in_ct(f"cat {BROWN_PID}").stdout)
    assert _port_pids() == [ours]
    again = _task(_serve(info, tmp_path))
    assert again["stats"]["changed"] == 0 and again["remote_calls"] == 1, again["tasks"]


def test_stale_fail_refuses_and_names_the_pid(brown, tmp_path):
    info, started = brown
    old, cmdline = _stranger()
    started.append(old)
    done = _serve(info, tmp_path, stale="fail")
    assert done.returncode != 0
    (task,) = _task(done)["tasks"]
    assert task["status"] == "failed" and f"pid {old} ({cmdline}" in task["msg"], task
    assert _alive(old) and _port_pids() == [old]
