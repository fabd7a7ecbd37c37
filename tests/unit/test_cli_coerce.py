"""Option values converted without pydantic give what Typer's own conversion gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer import _coercion

from pctfleet.cli.coerce import _UNSURE, fast_value
from pctfleet.cli.main import app

TEXTS = [
    "5",
    "0",
    "-3",
    "65535",
    "65536",
    "0.1",
    "-0.5",
    "1.5",
    "007",
    " 5",
    "+5",
    "1_000",
    "1e3",
    "abc",
    "",
    "nan",
    "inf",
    "٣",
    "a\0b",
    "0.",
    ".5",
    "10.0",
]


def _params() -> list:
    """Every option and argument of every command, with a context to convert in."""
    found = []

    def walk(command, ctx) -> None:
        for param in command.params:
            if hasattr(param, "type_descriptor"):
                found.append(pytest.param(param, ctx, id=f"{ctx.command_path} {param.name}"))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, typer.Context(sub, info_name=name, parent=ctx))

    root = typer.main.get_command(app)
    walk(root, typer.Context(root, info_name="pctfleet"))
    return found


def _values(tmp: Path) -> list:
    readable = tmp / "here.yml"
    readable.write_text("x")
    unreadable = tmp / "secret.yml"
    unreadable.write_text("x")
    unreadable.chmod(0)
    paths = [str(readable), str(unreadable), str(tmp / "missing.yml"), str(tmp)]
    return [*TEXTS, *paths, 3, 600.0, 2.5, True, ("1", "2"), ("a", "x"), (str(readable),)]


def _typer(param, ctx, value):
    slow = _coercion.build_runtime_param(param.type_descriptor)
    try:
        return "ok", slow._coerce_value(value, param=param, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return "error", f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize(("param", "ctx"), _params())
def test_the_fast_path_answers_only_as_typer_does(param, ctx, tmp_path: Path) -> None:
    desc = param.type_descriptor
    for value in _values(tmp_path):
        fast = fast_value(desc.annotation, value, desc.parameter_info)
        if fast is _UNSURE:
            continue  # Typer's converter decides: the same outcome by construction
        outcome, slow = _typer(param, ctx, value)
        assert (outcome, type(slow), slow) == ("ok", type(fast), fast), (param.name, value)


def test_the_fast_path_takes_the_common_values() -> None:
    """Not a path that declines everything: the usual values never reach pydantic."""
    params = {p.values[0].name: p.values[0] for p in _params() if "run" in p.id.split()}
    for name, value in (("port", "22"), ("timeout", "1.5"), ("extra_vars", ("a=1",))):
        desc = params[name].type_descriptor
        assert fast_value(desc.annotation, value, desc.parameter_info) is not _UNSURE, name


def test_a_run_converts_its_options_without_importing_pydantic(tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "from pctfleet.cli.main import _invoke, app\n"
        "code = _invoke(app, ['run', '-i', sys.argv[1], '--port', '22', '--forks', '2',"
        " '-e', 'a=1', '--timeout', '30', sys.argv[1]])\n"
        "print(json.dumps([code, 'pydantic' in sys.modules]))\n"
    )
    missing = str(tmp_path / "missing.yml")
    out = subprocess.run(
        [sys.executable, "-c", script, missing], capture_output=True, text=True, check=True
    )
    code, imported = json.loads(out.stdout.splitlines()[-1])
    assert code != 0  # the inventory is missing: options were converted, then it stopped
    assert imported is False


def test_a_bad_number_still_gets_typer_s_own_message() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["run", "--port", "0", "-i", "x.yml"])
    assert result.exit_code != 0
    assert "greater than or equal to 1" in result.output
