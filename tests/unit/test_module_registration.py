"""A module declares its name, arguments and fact in its class statement and is registered."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pctfleet.errors import PlaybookError
from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Args, Context, arg
from pctfleet.modules.base import Fact, FactReader, Module, Plan


@dataclass(frozen=True)
class EchoArgs(Args):
    text: str = arg(required=True)


class EchoFact(FactReader[str]):
    def command(self, args: EchoArgs, want_diff: bool) -> str:
        return f"echo {args.text}"

    def parse(self, reading: Fact) -> str:
        return reading.output.strip()


@pytest.fixture
def echo_module():
    fact = EchoFact()

    class Echo(Module, name="test_echo", args=EchoArgs, fact=fact):
        def plan(self, args: EchoArgs, state: str, check: bool) -> Plan:
            return Plan(state != args.text, msg=state)

    try:
        yield Echo, fact
    finally:
        REGISTRY.pop("test_echo", None)


def test_class_keywords_register_the_module_with_its_args_and_fact(echo_module) -> None:
    cls, fact = echo_module
    module = REGISTRY["test_echo"]
    assert type(module) is cls
    assert (module.name, module.Args, module.fact) == ("test_echo", EchoArgs, fact)
    args = module.prepare({"text": "hi"}, Context(), "t")
    assert module.probe(args, False) == "echo hi"
    assert module.decide(args, Fact("hi\n", 0), False).changed is False


def test_errors_in_arguments_quote_the_declared_name(echo_module) -> None:
    with pytest.raises(PlaybookError, match="test_echo: unknown argument 'colour'"):
        REGISTRY["test_echo"].prepare({"text": "hi", "colour": "red"}, Context(), "t")


def test_every_module_with_fixtures_is_registered_under_its_own_name() -> None:
    fixtures = Path(__file__).parent / "modules"
    named = {yaml.safe_load(path.read_text())["module"] for path in fixtures.glob("*.yaml")}
    assert "template" in named and sorted(named - set(REGISTRY)) == []
    assert all(m.name == key and m.Args.module == key for key, m in REGISTRY.items())


def test_the_lazy_registry_knows_every_file_s_modules_without_importing_them() -> None:
    # In a fresh interpreter: importing every file of the package must register
    # exactly the names FILES maps, each to the file that defines it.
    script = """
import importlib, json, pkgutil, sys
import pctfleet.modules as pkg
from pctfleet.modules.base import FILES, Module
before = sorted(m for m in sys.modules if m.startswith("pctfleet.modules."))
where = {}
for info in pkgutil.iter_modules(pkg.__path__):
    if info.name in ("base", "args"):
        continue
    mod = importlib.import_module("pctfleet.modules." + info.name)
    for value in vars(mod).values():
        if isinstance(value, type) and issubclass(value, Module) and "name" in vars(value):
            where[value.name] = info.name
print(json.dumps({"before": before, "where": where, "files": FILES}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["before"] == ["pctfleet.modules.args", "pctfleet.modules.base"]
    assert seen["where"] == seen["files"]
