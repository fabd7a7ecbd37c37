"""The one way a probe prints a fact: one line, `KEY=~VALUE` or `KEY=` and base64.

A value read from a container (a file's content, a link target, a PID) may
hold newlines, `=` or a fake frame marker. Such a value is base64-encoded: it can
never become a key of its own or end a frame early, whatever the container's files
say. A value of plain characters only (`PLAIN`: letters, digits, `._/@+,:-`) cannot
do either; the shell prints it as it is after a `~` (no base64 process to start),
and a base64 value never starts with `~`. Anything else after `~` is not a value.

    >>> decode_fields(encode_lines("a=1\\nb=x=y"))
    {'a': '1', 'b': 'x=y'}
    >>> decode_fields("pid=~42\\nspec=~a b\\n")
    {'pid': '42'}
"""

from __future__ import annotations

import base64
import binascii
import re

from pctfleet.sh import library

# `pf_kv KEY VALUE`: the shell side. Every snippet prints through it and nothing else.
KV_FUNCTION = library(["kv"])

# What pf_kv prints after `~` as it is; kv.sh spells the same class out letter by letter.
PLAIN = re.compile(r"[A-Za-z0-9._/@+,:-]+", re.ASCII)


def encode(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def decode(value: str) -> str | None:
    """The value `pf_kv` printed (plain after `~`, or base64), or None when it is not one."""
    if value.startswith("~"):
        return value[1:] if PLAIN.fullmatch(value, 1) else None
    try:
        return base64.b64decode(value.strip(), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def decode_pairs(text: str) -> list[tuple[str, str]]:
    """Every `KEY=~plain` or `KEY=<base64>` line, decoded, in order; any other line is dropped."""
    pairs = []
    for line in text.splitlines():
        key, sep, raw = line.partition("=")
        value = decode(raw) if sep else None
        if key and value is not None:
            pairs.append((key, value))
    return pairs


def decode_fields(text: str) -> dict[str, str]:
    """`decode_pairs` as a dict (later lines win)."""
    return dict(decode_pairs(text))


def encode_fields(fields: dict[str, str]) -> str:
    """Fields exactly as `pf_kv` prints them, whatever their values hold (newlines too)."""
    return "".join(f"{key}={encode(str(value))}\n" for key, value in fields.items())


def encode_lines(text: str) -> str:
    """Plain `key=value` lines as a probe prints them (for simulations and tests).

    A line without `=` is output of its own (a whole-fact value) and stays as it is.
    """
    lines = []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        lines.append(f"{key}={encode(value)}" if sep else line)
    return "\n".join(lines) + ("\n" if lines else "")
