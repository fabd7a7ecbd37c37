"""A module declares its name, arguments and fact in its class statement and is registered."""

from __future__ import annotations

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
