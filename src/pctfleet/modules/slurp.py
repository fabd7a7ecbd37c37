"""`slurp`: a file's bytes, base64-encoded, into the registered result (never changed)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from pctfleet.modules.args import Args, Context, arg, text
from pctfleet.modules.base import Module, Plan
from pctfleet.modules.textfile import FileText, TextFile, unreadable


@dataclass(frozen=True)
class SlurpArgs(Args):
    src: str = arg(required=True, aliases=("path",), convert=text)

    def check(self, ctx: Context, where: str) -> None:
        if not self.src.startswith("/"):
            raise self.fail(f"'src' must be an absolute path, got {self.src!r}", where)


class SlurpText(FileText):
    def path_of(self, args: Any) -> str:
        return args.src


class Slurp(Module, name="slurp", args=SlurpArgs, fact=SlurpText()):
    """Read a file into `content` (base64), as Ansible's `slurp` does."""

    registers_output = registers_msg = False

    def plan(self, args: SlurpArgs, state: TextFile, check: bool) -> Plan:
        if state.type == "directory":
            return Plan(False, failed=True, msg="source is a directory and must be a file")
        if state.type == "absent":
            return Plan(False, failed=True, msg=f"file not found: {args.src}")
        failed = unreadable(state, args.src)
        if failed:
            return failed
        content = base64.b64encode(state.content or b"").decode()
        return Plan(False, result={"content": content, "encoding": "base64", "source": args.src})
