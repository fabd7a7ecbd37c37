"""Option groups: one declaration, every command's signature, one instance per group."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import pytest
import typer.main
from typer.testing import CliRunner

from pctfleet.cli import main as cli
from pctfleet.cli.groups import flag, grouped, opt
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
        if name not in {"lab", "runs", "inventory", "connections"}  # no connection options
    }
    assert defaults == {
        "exec": 600.0,
        "run": 600.0,
        "provision": 1800.0,
        "doctor": 600.0,
        "audit": 600.0,
        "verify": 120.0,
        "rollout": 1800.0,
        "report": 600.0,
    }


def test_rollout_takes_only_the_selection_fields_it_names():
    result = CliRunner().invoke(cli.app, ["rollout", "--host", "h", "x.yml"])
    assert result.exit_code != 0 and "No such option: --host" in result.output


@dataclass
class Late:
    late: int = opt("--late", "", 1)


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


@dataclass
class Tuning:
    panel: ClassVar[str] = "Tuning"

    level: int = opt("--level -L", "How hard to try.", 3, min=1)
    venv: str | None = opt("--venv", "Serving venv.", shown="the 'venv' var")
    dry: bool = flag("--dry", "Change nothing.")


def _tuning_app(seen: dict[str, Any]) -> typer.Typer:
    @grouped(tune=Tuning)
    def command(*, tune: Tuning) -> int:
        seen["tune"] = tune
        return 0

    app = typer.Typer()
    app.command()(command)
    app.command("other")(command)
    return app


def test_opt_and_flag_fields_reach_help_and_parse():
    seen: dict[str, Any] = {}
    app = _tuning_app(seen)
    shown = CliRunner().invoke(app, ["command", "--help"], env={"COLUMNS": "200"}).output
    assert "How hard to try." in shown and "[default: 3]" in shown and "x>=1" in shown
    assert "--level" in shown and "-L" in shown and "Tuning" in shown
    assert "Serving venv." in shown and "[default: (the 'venv' var)]" in shown
    assert "Change nothing." in shown
    assert CliRunner().invoke(app, ["command", "-L", "5", "--dry"]).exit_code == 0
    assert seen["tune"] == Tuning(level=5, venv=None, dry=True)
    assert CliRunner().invoke(app, ["command"]).exit_code == 0
    assert seen["tune"] == Tuning(level=3, venv=None, dry=False)
    assert CliRunner().invoke(app, ["command", "--level", "0"]).exit_code != 0


def test_a_group_field_without_opt_is_refused_at_definition():
    @dataclass
    class Bare:
        level: int = 3

    with pytest.raises(TypeError, match=r"Bare.level is not declared with opt\(\)"):
        grouped(bare=Bare)(lambda *, bare: 0)
