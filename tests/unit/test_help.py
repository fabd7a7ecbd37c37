"""Every command's --help reads cleanly: no word left before a lone dot, no doubled
program name in the usage line, and no help text that rich would eat as markup."""

from __future__ import annotations

import re
import shlex
import sys

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from pctfleet.cli import main as cli

SPACE_DOT = re.compile(r"\s\.(\s|$)")  # "go ." but not "... in" or "e.g. x"
DOUBLED = re.compile(r"Usage: (\S+) \1\b")
BOX = re.compile(r"[\u2500-\u257f]")  # rich's panel borders, between wrapped lines


def command_paths(command, path=()):
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from command_paths(sub, (*path, name))


COMMANDS = [
    (app, prog, path, command)
    for app, prog in ((cli.app, "pctfleet"), (cli.provision_app(), "provision"))
    for path, command in command_paths(typer.main.get_command(app))
]


def render_help(app: typer.Typer, prog: str, path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(
        app, [*path, "--help"], prog_name=prog, env={"COLUMNS": "120", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    return " ".join(BOX.sub(" ", result.output).split())


@pytest.mark.parametrize(
    "app, prog, path, command", COMMANDS, ids=[" ".join((c[1], *c[2])) for c in COMMANDS]
)
def test_help_reads_cleanly(app, prog, path, command):
    text = render_help(app, prog, path)
    assert text.startswith(f"Usage: {' '.join((prog, *path))} "), text[:80]
    assert not DOUBLED.search(text), text[:80]
    lone = [text[max(m.start() - 40, 0) : m.end()] for m in SPACE_DOT.finditer(text)]
    assert not lone, lone
    for param in command.params:
        # rich would drop "[default: ...]" written in a help text (show_default says it)
        assert not re.search(r"\[\w", getattr(param, "help", None) or ""), param.name


def test_the_provision_program_names_itself_once(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["provision", "--help"])
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as exit_:
        cli.provision_main()
    assert exit_.value.code == 0
    text = " ".join(BOX.sub(" ", capsys.readouterr().out).split())
    assert text.startswith("Usage: provision [OPTIONS] "), text[:80]


EXAMPLES = re.compile(r"\n Examples:\n((?: +\S.*\n)+)\s*$")
RUNNABLE = [c for c in COMMANDS if c[3].callback is not None]


def help_examples(app: typer.Typer, prog: str, path: tuple[str, ...]) -> list[str]:
    """The example lines that end a command's --help, as printed."""
    result = CliRunner().invoke(
        app, [*path, "--help"], prog_name=prog, env={"COLUMNS": "200", "NO_COLOR": "1"}
    )
    text = "\n".join(line.rstrip() for line in result.output.splitlines()) + "\n"
    found = EXAMPLES.search(text)
    assert found, f"{prog} {' '.join(path)} --help does not end with Examples:\n{result.output}"
    return [line.strip() for line in found.group(1).splitlines()]


@pytest.mark.parametrize(
    "app, prog, path, command", RUNNABLE, ids=[" ".join((c[1], *c[2])) for c in RUNNABLE]
)
def test_help_ends_with_examples_that_parse(app, prog, path, command):
    lines = help_examples(app, prog, path)
    assert 2 <= len(lines) <= 3, lines
    for line in lines:
        words = shlex.split(line)
        if words[0] == "provision":  # `pctfleet provision` shares the provision program's help
            words = [prog, *path, *words[1:]]
        assert words[: len(path) + 1] == [prog, *path], line
        # The options as printed are accepted (the command itself is not run).
        command.make_context(prog, words[len(path) + 1 :])
        for address in re.findall(r"\b\d+\.\d+\.\d+\.\d+\b", line):
            assert address.startswith(("10.", "127.0.18.")), f"{address} in {line!r}"
