"""Command-line contract: exit codes for bad options and bad input, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pctfleet import exitcodes


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--bogus", "x.yml"],
        ["exec", "--forks", "0", "--", "true"],
        ["exec", "--port", "70000", "--host", "h", "--ct", "200", "--", "true"],
        ["exec", "--", "true"],
        ["exec", "-i", "inv.yml", "--host", "h", "--ct", "200", "--", "true"],
        ["exec", "--host", "h", "--", "true"],
    ],
)
def test_bad_options_exit_5_without_traceback(args):
    proc = run(*args)
    assert proc.returncode == exitcodes.BAD_OPTIONS, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["exec", "--host", "h", "--ct", "20x", "--", "true"], "'20x'"),
        (["exec", "--host", "-oProxyCommand=x", "--ct", "200", "--", "true"], "--host"),
        (
            ["run", "playbooks/site.yml", "--host", "h", "--ct", "200", "-e", "@/nonexistent.yml"],
            "nonexistent",
        ),
    ],
)
def test_bad_input_exits_4_with_one_line(args, fragment):
    proc = run(*args)
    assert proc.returncode == exitcodes.PARSE_ERROR, proc.stderr
    assert fragment in proc.stderr and proc.stderr.strip().count("\n") == 0


def test_missing_inventory_names_the_file(tmp_path):
    proc = run("exec", "-i", str(tmp_path / "nope.yml"), "--", "true")
    assert proc.returncode == exitcodes.PARSE_ERROR
    assert "nope.yml" in proc.stderr and "Traceback" not in proc.stderr


def test_help_lists_every_command():
    out = run("--help").stdout
    for command in ("exec", "run", "provision", "doctor", "lab"):
        assert command in out
