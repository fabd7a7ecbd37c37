"""Every shell snippet pctfleet runs in a container lives here, as a `.sh` file.

A snippet takes its inputs from shell variables, declared in its header:

    # inputs: VENV PIDFILE
    # uses: cuda_home stop

`snippet("name", VENV="/opt/sglang", PIDFILE="/run/x.pid")` returns the
library functions it uses (from `lib/`), one assignment per input, then its
body. Values are quoted here and nowhere else (`q`), so a snippet is plain
shell that `dash -n` and shellcheck can read as it is on disk, and a value
can never become code.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

_HEADER = re.compile(r"^#\s*(inputs|uses):(.*)$", re.MULTILINE)
_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")


def q(value: object) -> str:
    """Quote one value for the container's shell. The only quoting helper."""
    return shlex.quote(str(value))


@dataclass(frozen=True)
class Source:
    """One `.sh` file: its body and what its header declares."""

    name: str
    body: str
    inputs: tuple[str, ...]
    uses: tuple[str, ...]


@cache
def source(name: str) -> Source:
    """The snippet (or, as `lib/NAME`, the library function file) called `name`."""
    text = files(__package__).joinpath(f"{name}.sh").read_text()
    declared = {key: value.split() for key, value in _HEADER.findall(text)}
    inputs = tuple(declared.get("inputs", ()))
    bad = [word for word in inputs if not _NAME.match(word)]
    if bad:
        raise ValueError(f"{name}.sh: inputs must be UPPER_CASE shell names: {bad}")
    return Source(name, text, inputs, tuple(declared.get("uses", ())))


def library(names: tuple[str, ...] | list[str]) -> str:
    """The function files `names` need, each once, dependencies first."""
    seen: list[str] = []

    def visit(name: str) -> None:
        if name in seen:
            return
        for dependency in source(f"lib/{name}").uses:
            visit(dependency)
        seen.append(name)

    for name in names:
        visit(name)
    return "".join(source(f"lib/{name}").body for name in seen)


def assignments(name: str, values: dict[str, object]) -> str:
    """`NAME='value'` lines for exactly the inputs `name.sh` declares."""
    wanted = source(name).inputs
    missing = [key for key in wanted if key not in values]
    extra = [key for key in values if key not in wanted]
    if missing or extra:
        raise ValueError(f"{name}.sh takes {list(wanted)}; missing {missing}, unknown {extra}")
    return "".join(f"{key}={q(values[key])}\n" for key in wanted)


_SCALARS = (str, int, float, bool)
_MADE: dict[tuple, str] = {}  # the same snippet with the same values, for every container
_MADE_AT_MOST = 4096


def _made_key(name: str, argv: list[object] | None, values: dict[str, object]) -> tuple | None:
    """A key for plain scalar inputs, typed (1 and True quote differently); else None."""
    items = [*(argv or ()), *values.values()]
    if not all(type(item) in _SCALARS for item in items):
        return None
    # A float by its exact bits: -0.0 equals 0.0 and hashes alike, yet quotes otherwise.
    typed = tuple((type(item), item.hex() if type(item) is float else item) for item in items)
    return name, argv is not None, tuple(values), typed


def forget() -> None:
    """Drop the kept snippets (a run's values, secrets among them) once the run is over."""
    _MADE.clear()


def snippet(name: str, argv: list[object] | None = None, **values: object) -> str:
    """The runnable text of `name.sh`: its library functions, its inputs, its body.

    `argv`, when given, becomes the snippet's "$@" (a list input keeps its words).
    """
    key = _made_key(name, argv, values)
    made = _MADE.get(key) if key is not None else None
    if made is not None:
        return made
    words = "set --" + "".join(f" {q(item)}" for item in argv) + "\n" if argv is not None else ""
    made = library(source(name).uses) + assignments(name, values) + words + source(name).body
    if key is not None and len(_MADE) < _MADE_AT_MOST:
        _MADE[key] = made
    return made
