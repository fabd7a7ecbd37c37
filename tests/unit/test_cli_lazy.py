"""`pctfleet NAME ...` builds an app with NAME's command alone: same help, same
errors, and none of the other commands' modules loaded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from pctfleet.cli import main

NAMES = [*main.COMMANDS, *main.GROUPS]
# What the other commands load and `run` does not need.
OTHERS_ONLY = (
    "pctfleet.cli.audit",
    "pctfleet.cli.doctor",
    "pctfleet.cli.fleetreport",
    "pctfleet.cli.rollout",
    "pctfleet.cli.verify",
    "pctfleet.cli.inventory",
    "pctfleet.cli.runs",
    "pctfleet.lab.cli",
)


def invoke(app, args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, prog_name="pctfleet", env={"COLUMNS": "100"})
    return result.exit_code, result.output


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("extra", [["--help"], ["--no-such-option"]])
def test_one_command_app_answers_as_the_whole_app(name, extra):
    alone = invoke(main.build_app(only=name), [name, *extra])
    assert alone == invoke(main.full_app(), [name, *extra])
    assert alone[0] in (0, 2)


def test_a_command_line_gets_its_commands_app_only():
    assert list(main.app_for(["run", "site.yml"]).registered_commands)[0].name == "run"
    assert len(main.app_for(["run"]).registered_commands) == 1
    assert [g.name for g in main.app_for(["lab", "up"]).registered_groups] == ["lab"]
    for args in ([], ["--help"], ["no-such-command"]):
        assert main.app_for(args) is main.full_app()


def test_completion_gets_every_command(monkeypatch):
    monkeypatch.setenv("_PCTFLEET_COMPLETE", "complete_bash")
    assert main.app_for(["run"]) is main.full_app()


def test_run_loads_none_of_the_other_commands():
    script = (
        "import json, sys\n"
        "from pctfleet.cli import main\n"
        "main.app_for(['run'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert "pctfleet.cli.run" in loaded
    assert sorted(loaded & set(OTHERS_ONLY)) == []
