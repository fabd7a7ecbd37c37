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

pytestmark = pytest.mark.lab

KEY = "node2/201"
LXC = ["lxc-attach", "-P", "/var/lib/pctfleet-lab/lxc", "-n", "pctfleet-n2-201", "--"]
UV = "/root/.local/bin/uv"
MADE = "/root/venv /root/venv-nouv /root/.local/bin/uv /root/.cache/uv /etc/uv"
# The lab's HTTPS goes through a proxy whose CA is only in the system store: like pip
# (Debian's reads that store), uv must be told to use it. Users set it in uv's own config.
UV_TOML = "mkdir -p /etc/uv && echo 'native-tls = true' > /etc/uv/uv.toml"


def in_ct(script: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([*LXC, "sh", "-c", script], input=stdin, capture_output=True)
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
