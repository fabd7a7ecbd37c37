"""Option groups: one declaration, every command's signature, one instance per group."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer.main
from typer.testing import CliRunner

from pctfleet.cli import main as cli
from pctfleet.cli.groups import grouped
from pctfleet.cli.options import DEFAULT_PLAYBOOK, default_playbook


def test_the_shipped_playbook_is_found_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = default_playbook(DEFAULT_PLAYBOOK)
    assert found.is_file() and found.parts[-3:] == ("data", "playbooks", "site.yml")


def test_a_playbook_in_the_working_folder_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "site.yml").write_text("[]\n")
    assert default_playbook(DEFAULT_PLAYBOOK) == DEFAULT_PLAYBOOK
    assert default_playbook(Path("other.yml")) == Path("other.yml")


def test_a_group_s_default_can_differ_per_command():
    defaults = {
        name: next(p.default for p in cmd.params if p.name == "timeout")
        for name, cmd in typer.main.get_command(cli.app).commands.items()
        if name != "lab"
    }
    assert defaults == {
        "exec": 600.0,
        "run": 600.0,
        "provision": 1800.0,
        "doctor": 600.0,
        "audit": 600.0,
        "verify": 120.0,
        "rollout": 1800.0,
    }


def test_rollout_takes_only_the_selection_fields_it_names():
    result = CliRunner().invoke(cli.app, ["rollout", "--host", "h", "x.yml"])
    assert result.exit_code != 0 and "No such option: --host" in result.output


@dataclass
class Late:
    late: Annotated[int, typer.Option("--late")] = 1


def test_groups_the_signature_does_not_name_stand_where_rest_does():
    seen: dict[str, Any] = {}

    @grouped(out=Late)
    def command(*, first: Annotated[int, typer.Option("--first")] = 0, **rest: Any) -> int:
        seen.update(first=first, **rest)
        return 0

    app = typer.Typer()
    app.command()(command)
    app.command("other")(command)  # two commands, so typer keeps the command name
    result = CliRunner().invoke(app, ["command", "--help"])
    assert result.output.index("--first") < result.output.index("--late")
    assert CliRunner().invoke(app, ["command", "--late", "7"]).exit_code == 0
    assert seen == {"first": 0, "out": Late(late=7)}
