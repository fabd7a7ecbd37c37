"""Modules that run on the controller only: they cost no remote call."""

from __future__ import annotations

from typing import Any

from pctfleet.modules.base import Fact, LegacyModule, Plan
from pctfleet.playbook.templating import render


class Debug(LegacyModule):
    """Print a message or a variable: `debug: {msg: "..."}` or `debug: {var: result}`."""

    name = "debug"
    args = {"msg", "var"}
    controller = True

    def validate(self, args: dict[str, Any], where: str) -> None:
        if "var" in args:
            args["_value"] = render("{{ " + str(args["var"]) + " }}", args["_vars"], where=where)

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        if "var" in args:
            return Plan(False, msg=f"{args['var']} = {args.get('_value')!r}")
        return Plan(False, msg=str(args.get("msg", "Hello world!")))


class SetFact(LegacyModule):
    """Set variables for the later tasks of this container."""

    name = "set_fact"
    args = None
    controller = True

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = {k: v for k, v in args.items() if not k.startswith("_")}
        return Plan(False, result={"ansible_facts": facts})

    def after(self, registered: dict[str, Any], variables: dict[str, Any]) -> None:
        variables.update(registered.get("ansible_facts", {}))


class Fail(LegacyModule):
    """Stop this container's run with a message."""

    name = "fail"
    args = {"msg"}
    controller = True

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        return Plan(False, failed=True, msg=str(args.get("msg", "Failed as requested")))
