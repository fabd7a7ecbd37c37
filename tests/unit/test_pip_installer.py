"""sh/lib/pip.sh: the exact commands each installer the plan can choose runs.

A fake `uv` and a fake python record their argv; the real function runs in dash.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pctfleet.sh import library, q

RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> {log}
case "$*" in "-c import pip") [ -f {has_pip} ] ;; "-m ensurepip") touch {has_pip} ;; esac
"""


def _run(tmp_path: Path, tool: str, verb: str, *argv: str, has_pip: bool = False) -> list[str]:
    log, marker = tmp_path / "log", tmp_path / "has-pip"
    if has_pip:
        marker.touch()
    for name in ("uv", "python"):
        path = tmp_path / name
        path.write_text(RECORDER.format(log=q(log), has_pip=q(marker)))
        path.chmod(0o755)
    python = str(tmp_path / "python")
    tool = str(tmp_path / "uv") if tool == "uv" else tool
    line = " ".join(q(w) for w in ["pctfleet_pip", tool, python, verb, *argv])
    done = subprocess.run(["dash", "-c", library(("pip",)) + line], capture_output=True)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


@pytest.mark.parametrize(
    ("tool", "verb", "has_pip", "commands"),
    [
        ("uv", "install", False, ["uv pip install --python PY --no-deps tomli==2.0.1"]),
        ("uv", "uninstall", True, ["uv pip uninstall --python PY --no-deps tomli==2.0.1"]),
        (
            "pip",
            "install",
            True,
            ["python -m pip install --no-input --disable-pip-version-check --no-deps tomli==2.0.1"],
        ),
        (
            "ensurepip",
            "install",
            False,
            [
                "python -c import pip",
                "python -m ensurepip",
                "python -m pip install --no-input --disable-pip-version-check --no-deps "
                "tomli==2.0.1",
            ],
        ),
        ("pip", "uninstall", True, ["python -m pip uninstall -y --no-deps tomli==2.0.1"]),
    ],
)
def test_each_installer_runs_its_commands(
    tmp_path: Path, tool: str, verb: str, has_pip: bool, commands: list[str]
) -> None:
    seen = _run(tmp_path, tool, verb, "--no-deps", "tomli==2.0.1", has_pip=has_pip)
    assert [c.replace(str(tmp_path / "python"), "PY") for c in seen] == commands


def test_ensurepip_is_skipped_where_pip_is_there(tmp_path: Path) -> None:
    seen = _run(tmp_path, "ensurepip", "install", "x", has_pip=True)
    assert seen == [
        "python -c import pip",
        "python -m pip install --no-input --disable-pip-version-check x",
    ]


def test_uv_on_path_is_found(tmp_path: Path) -> None:
    (tmp_path / "uv").write_text("#!/bin/sh\n")
    (tmp_path / "uv").chmod(0o755)
    script = library(("pip",)) + f"PATH={q(tmp_path)}; pctfleet_uv"
    done = subprocess.run(["/bin/dash", "-c", script], capture_output=True, text=True)
    assert done.stdout == f"{tmp_path}/uv\n"
