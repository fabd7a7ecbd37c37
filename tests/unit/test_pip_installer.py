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


FLAKY = """#!/bin/sh
echo "$(basename "$0") $* resume=${{PIP_RESUME_RETRIES:-}}" >> {log}
n=$(wc -l < {log})
if [ "$n" -le {fails} ]; then echo "{message}" >&2; exit 1; fi
echo installed
"""


def _flaky(tmp_path: Path, tool: str, fails: int, message: str, env: str = "") -> tuple:
    """pctfleet_pip with an installer that fails `fails` times with `message` on stderr."""
    log = tmp_path / "log"
    log.touch()
    for name in ("uv", "python"):
        path = tmp_path / name
        path.write_text(FLAKY.format(log=q(log), fails=fails, message=message))
        path.chmod(0o755)
    tool = str(tmp_path / "uv") if tool == "uv" else tool
    line = " ".join(q(w) for w in ["pctfleet_pip", tool, str(tmp_path / "python"), "install", "x"])
    script = f"PCTFLEET_NET_PAUSE=0 {env}\n" + library(("pip",)) + line
    done = subprocess.run(["dash", "-c", script], capture_output=True, text=True)
    return done, log.read_text().splitlines()


PIP_CUT_SHORT = "error: incomplete-download (11.3 MB/37.4 MB)"
UV_TIMEOUT = "error: Failed to download: operation timed out"


@pytest.mark.parametrize(("tool", "message"), [("pip", PIP_CUT_SHORT), ("uv", UV_TIMEOUT)])
def test_a_network_failure_is_tried_again(tmp_path: Path, tool: str, message: str) -> None:
    done, calls = _flaky(tmp_path, tool, fails=2, message=message)
    assert done.returncode == 0, done.stderr
    assert len(calls) == 3
    assert done.stdout.strip() == "installed"
    assert done.stderr.count(message) == 2
    assert "network error (attempt 2 of 3)" in done.stderr


def test_tries_are_bounded_and_the_last_failure_is_the_result(tmp_path: Path) -> None:
    done, calls = _flaky(tmp_path, "pip", fails=9, message=PIP_CUT_SHORT)
    assert done.returncode == 1
    assert len(calls) == 3


def test_a_failure_that_is_not_the_network_is_not_tried_again(tmp_path: Path) -> None:
    done, calls = _flaky(tmp_path, "pip", fails=9, message="ERROR: No matching distribution")
    assert done.returncode == 1
    assert len(calls) == 1
    assert "No matching distribution" in done.stderr


def test_pip_resumes_cut_downloads_unless_the_container_says_otherwise(tmp_path: Path) -> None:
    _, calls = _flaky(tmp_path, "pip", fails=0, message="")
    assert calls[0].endswith("resume=5")
    (tmp_path / "log").unlink()
    _, calls = _flaky(tmp_path, "pip", fails=0, message="", env="export PIP_RESUME_RETRIES=0")
    assert calls[0].endswith("resume=0")


def test_a_network_hiccup_pip_got_past_does_not_make_a_later_failure_a_network_one(tmp_path):
    got_past = (
        "WARNING: Retrying (Retry(total=4, connect=None, read=None)) after connection broken "
        "by 'ReadTimeoutError(\\\"Read timed out.\\\")': /simple/x/\\n"
        "ERROR: No matching distribution found for x"
    )
    done, calls = _flaky(tmp_path, "pip", fails=9, message=got_past)
    assert done.returncode == 1
    assert len(calls) == 1
