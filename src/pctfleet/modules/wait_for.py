"""`wait_for`: a port open or closed, a file there (holding a match) or gone.

The shared probe checks the condition once: where it already holds the task costs
nothing more. Otherwise (and always with `delay`, whose point is to wait first) a loop
in the container checks it every `sleep` seconds until `timeout`. Never changed.
`search_regex` is a Python pattern here and PCRE (`grep -P`, line by line) in the loop.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from pctfleet.facts.kv import decode_fields
from pctfleet.modules.args import Args, Context, arg, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, number
from pctfleet.modules.textfile import TEXT_LIMIT
from pctfleet.sh import snippet

STATES = {"started", "present", "stopped", "absent"}


def _port(value: Any, where: str) -> int:
    number({"port": value}, "port", where, "wait_for", integer=True)
    return int(value)


def _seconds(key: str) -> Any:
    def convert(value: Any, where: str) -> float:
        number({key: value}, key, where, "wait_for")
        return float(value)

    return convert


@dataclass(frozen=True)
class WaitForArgs(Args):
    host: str = arg("127.0.0.1", convert=text)
    port: int | None = arg(None, convert=_port)
    path: str | None = arg(None, convert=text)
    search_regex: str | None = arg(None, convert=text)
    state: str = arg("started", choices=STATES)
    timeout: float = arg(300.0, convert=_seconds("timeout"))
    delay: float = arg(0.0, convert=_seconds("delay"))
    sleep: float = arg(1.0, convert=_seconds("sleep"))
    connect_timeout: float = arg(5.0, convert=_seconds("connect_timeout"))
    msg: str | None = arg(None, convert=text)

    def check(self, ctx: Context, where: str) -> None:
        if self.port is not None and self.path is not None:
            raise self.fail("'port' and 'path' are mutually exclusive", where)
        if self.search_regex is not None:
            if self.path is None:
                raise self.fail("search_regex is only supported with 'path' here", where)
            try:
                re.compile(self.search_regex)
            except re.error as err:
                raise self.fail(f"bad search_regex {self.search_regex!r} ({err})", where) from None

    def inputs(self) -> dict[str, Any]:
        return {
            "WF_STATE": self.state,
            "WF_HOST": self.host,
            "WF_PORT": "" if self.port is None else self.port,
            "WF_PATH": self.path or "",
            "WF_REGEX": self.search_regex or "",
            "WF_CONNECT": f"{self.connect_timeout:g}",
            "WF_LIMIT": TEXT_LIMIT,
        }

    def timeout_message(self) -> str:
        if self.msg:
            return self.msg
        what = f"{self.host}:{self.port}" if self.port is not None else self.path
        if self.state in {"stopped", "absent"}:
            kind = "to stop" if self.port is not None else "to be absent"
            return f"Timeout when waiting for {what} {kind}."
        if self.search_regex:
            return f"Timeout when waiting for search string {self.search_regex} in {self.path}"
        kind = "file " if self.path else ""
        return f"Timeout when waiting for {kind}{what}"


@dataclass(frozen=True)
class Holds:
    ok: bool = False
    content: bytes | None = None
    fields: dict = field(default_factory=dict)


class WaitFact(FactReader[Holds]):
    State = Holds

    def command(self, args: WaitForArgs, want_diff: bool) -> str | None:  # type: ignore[override]
        if args.delay or (args.port is None and args.path is None):
            return None  # the task waits every time
        return snippet("wait_for_fact", **args.inputs())

    def parse(self, reading: Fact) -> Holds:
        fields = reading.fields()
        content = base64.b64decode(fields["content"]) if "content" in fields else None
        return Holds(fields.get("ok") == "1", content)

    def converged(self, args: WaitForArgs, world: World) -> dict[str, str]:
        return {"ok": "1"}


def _groups(args: WaitForArgs, content: bytes | None) -> dict[str, Any]:
    if not args.search_regex or content is None:
        return {}
    text_ = content.decode("utf-8", errors="replace")
    match = re.search(args.search_regex, text_, re.MULTILINE)
    if not match:
        return {}
    return {"match_groups": list(match.groups()), "match_groupdict": match.groupdict()}


class WaitFor(Module, name="wait_for", args=WaitForArgs, fact=WaitFact()):
    """Wait for a port or a file, in the container; registers `elapsed`."""

    def plan(self, args: WaitForArgs, state: Holds | None, check: bool) -> Plan:
        if state is not None and state.ok:
            return Plan(False, result={"elapsed": 0, **_groups(args, state.content)})
        inputs = {
            **args.inputs(),
            "WF_TIMEOUT": f"{args.timeout:g}",
            "WF_DELAY": f"{args.delay:g}",
            "WF_SLEEP": f"{args.sleep:g}",
        }
        # `changed` here only makes the engine run the loop; finish() reports it unchanged.
        return Plan(True, script=snippet("wait_for", **inputs), skip_in_check=True)

    def finish(self, args: WaitForArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        fields = decode_fields(out)
        elapsed = int(fields.get("elapsed", "0") or 0)
        if rc != 0:
            return {
                "changed": False,
                "failed": True,
                "elapsed": elapsed,
                "msg": args.timeout_message(),
            }
        content = base64.b64decode(fields["content"]) if "content" in fields else None
        return {"changed": False, "elapsed": elapsed, **_groups(args, content)}
