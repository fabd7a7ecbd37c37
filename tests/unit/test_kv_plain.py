"""pf_kv's two forms: plain values as they are after `~` (no process), the rest base64.

Every case runs in dash and in bash (either may be a container's /bin/sh) and under a
UTF-8 locale, where a bash range like `a-z` could match more than ASCII.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from pctfleet import sh
from pctfleet.facts.kv import decode, decode_pairs

SHELLS = ["dash", "bash"]
PLAIN_VALUES = ["42", "directory", "/opt/bench/venv/bin/python", "a.b_c-d@e+f,g:h/", "x-"]
OTHER_VALUES = [
    "a\nb",
    "x=y",
    "~tilde",
    "caf\u00e9",
    "two words",
    "tab\there",
    "\x1epctfleet-fact-end",
    "*",
    "[a]",
    "back\\slash",
    "$HOME",
    "\u00e0",  # a letter a UTF-8 bash's [a-z] would take
]


def _print(shell: str, values: list[str | bytes], locale: str = "C.UTF-8") -> bytes:
    script = sh.library(["kv"]) + 'for v in "$@"; do pf_kv k "$v"; done\n'
    env = {**os.environ, "LC_ALL": locale}
    argv = [shell, "-c", script, "sh", *[os.fsencode(v) for v in values]]
    return subprocess.run(argv, capture_output=True, check=True, env=env).stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_a_plain_value_is_printed_as_it_is_and_reads_back(shell: str) -> None:
    out = _print(shell, PLAIN_VALUES).decode()
    assert out == "".join(f"k=~{value}\n" for value in PLAIN_VALUES)
    assert decode_pairs(out) == [("k", value) for value in PLAIN_VALUES]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("value", OTHER_VALUES, ids=ascii)
def test_any_other_value_goes_base64_and_reads_back_exactly(shell: str, value: str) -> None:
    out = _print(shell, [value]).decode()
    assert out.count("\n") == 1 and not out.startswith("k=~"), out
    assert decode_pairs(out) == [("k", value)]


@pytest.mark.parametrize("shell", SHELLS)
def test_bytes_that_are_no_text_go_base64(shell: str) -> None:
    out = _print(shell, [b"a\xffb"]).decode()
    assert not out.startswith("k=~") and decode_pairs(out) == [("k", "a\ufffdb")]


@pytest.mark.parametrize("shell", SHELLS)
def test_an_empty_value_is_an_empty_field(shell: str) -> None:
    assert _print(shell, [""]) == b"k=\n"
    assert decode_pairs("k=\n") == [("k", "")]


@pytest.mark.parametrize("shell", SHELLS)
def test_a_forged_plain_line_stays_one_value(shell: str) -> None:
    forged = "~a\nb=~c\n\x1epctfleet-fact-end x y 0"
    out = _print(shell, [forged]).decode()
    assert decode_pairs(out) == [("k", forged)]


def test_dash_and_bash_print_the_same_whatever_the_locale() -> None:
    values = PLAIN_VALUES + OTHER_VALUES + [""]
    outputs = {_print(shell, values, loc) for shell in SHELLS for loc in ("C", "C.UTF-8")}
    assert len(outputs) == 1


@pytest.mark.parametrize("raw", ["~a b", "~a\tb", "~caf\u00e9", "~", "~a=b", "~~a", "~a*"])
def test_the_reader_takes_nothing_but_the_plain_class_after_the_tilde(raw: str) -> None:
    assert decode(raw) is None
    assert decode_pairs(f"k={raw}\n") == []
