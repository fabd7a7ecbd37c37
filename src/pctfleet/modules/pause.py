"""`pause`: wait on the controller for `seconds` or `minutes`. Runs are unattended, so a
`prompt` that waits for someone to answer is refused before anything runs."""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any

from pctfleet.errors import PlaybookError, brief
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Module, Plan

# The clock and the sleep, replaceable in tests.
sleep = time.sleep


def _duration(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or not 0 <= number < 1e6:
        raise PlaybookError(f"pause: expected a number >= 0, got {brief(value)}", where=where)
    return number


@dataclass(frozen=True)
class PauseArgs(Args):
    seconds: float | None = arg(None, convert=_duration)
    minutes: float | None = arg(None, convert=_duration)
    prompt: str | None = arg(None, convert=text)
    echo: bool = arg(True, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        if self.seconds is not None and self.minutes is not None:
            raise self.fail("'seconds' and 'minutes' are mutually exclusive", where)
        if self.seconds is None and self.minutes is None:
            raise self.fail(
                "a pause without 'seconds' or 'minutes' waits for a keypress, and runs are "
                "unattended: give 'seconds' or 'minutes'",
                where,
            )


def _stamp(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M:%S.%f")


class Pause(Module, name="pause", args=PauseArgs):
    """Wait, then go on (Ansible's `pause` with a duration); never changes anything."""

    controller = True

    def plan(self, args: PauseArgs, state: None, check: bool) -> Plan:
        if args.minutes is not None:
            wait, shown = args.minutes * 60, f"Paused for {args.minutes:g} minutes"
        else:
            wait, shown = float(args.seconds or 0), f"Paused for {args.seconds:g} seconds"
        start = time.time()
        sleep(wait)
        stop = time.time()
        result = {"start": _stamp(start), "stop": _stamp(stop), "delta": int(stop - start)}
        result |= {"user_input": "", "echo": args.echo, "stdout": shown}
        return Plan(False, msg=shown, result=result)
