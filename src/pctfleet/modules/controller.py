"""Modules that run on the controller only: they cost no remote call."""

from __future__ import annotations

from typing import Any

from .base import Fact, Module, Plan


class Debug(Module):
    """Print a message or a variable: `debug: {msg: "..."}` or `debug: {var: result}`."""

    name = "debug"
    args = {"msg", "var"}
    controller = True

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        if "var" in args:
            return Plan(False, msg=f"{args['var']} = {args.get('_value')!r}")
        return Plan(False, msg=str(args.get("msg", "Hello world!")))


class SetFact(Module):
    """Set variables for the later tasks of this container."""

    name = "set_fact"
    args = None
    controller = True

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = {k: v for k, v in args.items() if not k.startswith("_")}
        return Plan(False, result={"ansible_facts": facts})


class Fail(Module):
    """Stop this container's run with a message."""

    name = "fail"
    args = {"msg"}
    controller = True

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        return Plan(False, failed=True, msg=str(args.get("msg", "Failed as requested")))
