"""`file`'s `access_time` and `modification_time`: the wall-clock second a task names,
and the `touch` lines that set it, compared with what the probe read."""

from __future__ import annotations

import time

from pctfleet.modules.base import q


def wall_clock(value: str | None, fmt: str) -> str | None:
    """A task's `access_time`/`modification_time`: None for `preserve` (or not given),
    `now`, or the local time it names as `YYYY-MM-DD HH:MM:SS` (read with `fmt` by
    Python's strptime, as Ansible reads it; a zone or fraction in it is dropped, as
    Ansible's mktime drops it). The container turns it into a time in its own zone.
    A value that does not match raises ValueError with strptime's words."""
    if value is None or value == "preserve":
        return None
    if value == "now":
        return "now"
    found = time.strptime(value, fmt)
    return "{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}".format(*found[:6])


def _same_time(have: str, wanted: str) -> bool:
    """`stat %x`/`%y` text (`2024-01-02 03:04:05.000000000 +0000`) is the wall-clock
    second `wanted`, exactly (Ansible compares the float seconds)."""
    clock = have.rsplit(" ", 1)[0] if have.count(" ") >= 2 else have
    return clock in (wanted, f"{wanted}.000000000")


def time_fixes(path: str, wanted: tuple, have: tuple) -> tuple[list[str], dict, dict]:
    """`touch` lines that give `path` the wanted (atime, mtime), each None (preserve),
    `now` (always a change, as in Ansible) or a wall-clock second; and the diff."""
    fix = {}
    for key, want, had in zip(("atime", "mtime"), wanted, have, strict=True):
        if want is not None and (want == "now" or not _same_time(had, want)):
            fix[key] = want
    if not fix:
        return [], {}, {}
    if len(fix) == 2 and fix["atime"] == fix["mtime"]:
        lines = [_touch("", fix["atime"], path)]
    else:
        lines = [
            _touch("-a" if key == "atime" else "-m", value, path) for key, value in fix.items()
        ]
    before = {key: dict(zip(("atime", "mtime"), have, strict=True))[key] for key in fix}
    return lines, before, fix


def _touch(which: str, value: str, path: str) -> str:
    when = "" if value == "now" else f" -d {q(value)}"
    return f"touch -c{' ' + which if which else ''}{when} -- {q(path)}"
