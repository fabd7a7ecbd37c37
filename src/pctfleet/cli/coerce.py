"""Option values converted without pydantic when the answer is certain.

Typer (0.2x) converts every option's value, the unset ones too, through a
pydantic TypeAdapter it builds on first use: importing pydantic and building
some thirty adapters costs a `run` about a tenth of a second of CPU before it
does anything. Our options are str, int, float, Path and lists of them, and
for a well-formed value pydantic's answer is plain: the string itself,
`int(text)`, `float(text)`, `Path(text)`. Those we give here. Anything else
(a malformed number, a bound crossed, a type we do not know) goes to Typer's
own adapter, so every error message stays Typer's word for word.

`install()` wraps `get_runtime_param` of Typer's parameter class. On a Typer
without that hook it changes nothing: the CLI is then only slower.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, get_args, get_origin

# Only the spellings where int()/float() and pydantic agree to the bit; others
# (" 5", "1_000", "1e3", "+5", "007") go to pydantic, which decides.
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?", re.ASCII)
_UNSURE = object()  # the fast path declines; Typer's adapter decides


def _number(kind: type, value: Any, info: Any) -> Any:
    if type(value) is kind:
        number = value
    elif isinstance(value, str) and (_INT if kind is int else _FLOAT).fullmatch(value):
        number = kind(value)
    else:
        return _UNSURE
    if info.clamp or (info.min is not None and number < info.min):
        return _UNSURE
    if info.max is not None and number > info.max:
        return _UNSURE
    return number


def _path(value: Any, info: Any) -> Any:
    """A path option that passes Typer's default checks (readable if it exists)."""
    if not isinstance(value, str) or not value or "\0" in value:
        return _UNSURE
    if info.exists or info.resolve_path or info.writable or info.allow_dash:
        return _UNSURE
    if info.path_type not in (None, Path) or not (info.file_okay and info.dir_okay):
        return _UNSURE
    path = Path(value)
    try:
        os.stat(path)
    except OSError:
        return path  # Typer checks no further either
    if info.readable and not os.access(path, os.R_OK):
        return _UNSURE  # Typer words the refusal
    return path


def _leaf(annotation: Any, value: Any, info: Any) -> Any:
    if annotation is str:
        return value if isinstance(value, str) else _UNSURE
    if annotation is int or annotation is float:
        return _number(annotation, value, info)
    if annotation is Path:
        return _path(value, info)
    return _UNSURE


def fast_value(annotation: Any, value: Any, info: Any) -> Any:
    """The value Typer's adapter would give for `value`, or `_UNSURE`."""
    if info.parser is not None or getattr(info, "click_type", None) is not None:
        return _UNSURE
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if not isinstance(value, (list, tuple)):
            return _UNSURE
        items = [_leaf(item, v, info) for v in value]
        return _UNSURE if any(v is _UNSURE for v in items) else items
    return _leaf(annotation, value, info)


def install() -> bool:
    """Put the fast path in front of Typer's conversion; False where Typer has no hook."""
    try:
        from typer import _coercion
        from typer.core import _TyperParameter
    except ImportError:
        return False
    base = getattr(_coercion, "RuntimeParam", None)
    original = getattr(_TyperParameter, "get_runtime_param", None)
    if base is None or original is None or getattr(original, "fast", False):
        return False

    class FastParam(base):  # type: ignore[misc, valid-type]
        """Converts the values it is sure of; hands the rest to Typer's own converter."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            converted = fast_value(self.annotation, value, self.parameter_info)
            if converted is not _UNSURE:
                return converted
            slow = _coercion.build_runtime_param(param.type_descriptor)
            return slow._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        desc = getattr(self, "type_descriptor", None)
        if self._runtime_param is None and desc is not None and not desc.is_file:
            self._runtime_param = FastParam(
                parameter_info=desc.parameter_info, annotation=desc.annotation
            )
        return original(self)

    get_runtime_param.fast = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param
    return True
