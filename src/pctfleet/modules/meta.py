"""`meta`: flow control the engine acts on (see run/engine.py and run/playflow.py).
The loader refuses actions other than those in `META_ACTIONS`."""

from __future__ import annotations

from dataclasses import dataclass

from pctfleet.modules.args import Args, arg
from pctfleet.modules.base import Module, Plan


def _text(value: object, where: str) -> str:
    return str(value)


@dataclass(frozen=True)
class MetaArgs(Args):
    free_form: str = arg(required=True, convert=_text)


class Meta(Module, name="meta", args=MetaArgs):
    """`meta: flush_handlers`, `end_host`, `end_play`, `end_batch` or `noop`."""

    registers_output = False

    controller = True

    def plan(self, args: MetaArgs, state: None, check: bool) -> Plan:
        return Plan(False, msg=f"meta: {args.free_form}")
